import { join } from "node:path";
import { SqliteStore } from "@resumable/sqlite";

/** The SQLite store on a file database inside the job's work directory. */
export default ({ workDir }: { workDir: string }) => new SqliteStore(join(workDir, "checkpoints.sqlite"));
