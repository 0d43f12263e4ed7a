import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { SqliteStore } from "@resumable/sqlite";

/** A deliberately broken factory: every process gets a new, empty database, so nothing survives a crash. */
export default ({ workDir }: { workDir: string }) => new SqliteStore(join(workDir, `${randomUUID()}.sqlite`));
