// The module `pnpm conformance` hands the CLI: the SQLite store on a file database inside the
// directory the suite gives each call (a fresh one per contract check, a shared one per crash job).
import { join } from "node:path";
import { SqliteStore } from "@resumable/sqlite";

export default {
  name: "sqlite",
  create: ({ workDir }: { workDir: string }) => new SqliteStore(join(workDir, "checkpoints.sqlite")),
};
