import { join } from "node:path";
import { SqliteStore } from "@resumable/sqlite";
import { slowWrites } from "./slow-writes.js";

/** The SQLite store with slow putWrites, under core's saver (which orders checkpoints after writes). */
export default ({ workDir }: { workDir: string }) => slowWrites(new SqliteStore(join(workDir, "checkpoints.sqlite")));
