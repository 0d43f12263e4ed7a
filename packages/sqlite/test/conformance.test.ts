// The whole conformance suite, LangChain's validation cases included, against SQLite files.
import { rmSync } from "node:fs";
import { join } from "node:path";

import { runConformance } from "@resumable/conformance";
import { afterAll } from "vitest";

import { SqliteStore } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

const dir = tempDir();
const files = new WeakMap<object, string>();
let opened = 0;

runConformance(
  {
    name: "sqlite",
    create() {
      const path = join(dir, `conformance-${(opened += 1)}.db`);
      // NORMAL: the suite checks behaviour, not fsync; it runs ~770 cases on fresh files.
      const store = new SqliteStore(path, { synchronous: "NORMAL" });
      files.set(store, path);
      return store;
    },
    teardown(subject) {
      const path = files.get(subject);
      if (path) for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    },
  },
  { name: "sqlite" },
);
