// The module `pnpm conformance` hands the CLI: the SQLite store on a fresh file database per check.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "@resumable/sqlite";

const dirs = new WeakMap<SqliteStore, string>();

export default {
  name: "sqlite",
  create(): SqliteStore {
    const dir = mkdtempSync(join(tmpdir(), "resumable-sqlite-"));
    const store = new SqliteStore(join(dir, "checkpoints.sqlite"));
    dirs.set(store, dir);
    return store;
  },
  teardown(store: SqliteStore): void {
    const dir = dirs.get(store);
    if (dir) rmSync(dir, { recursive: true, force: true });
  },
};
