import { runConformance } from "@resumable/conformance";
import { afterAll, beforeAll } from "vitest";

import { PostgresStore } from "../src/index.js";
import { TestDb } from "./helpers.js";

// The whole conformance suite, LangChain's validation suite included. Every store the suite asks for
// lives in its own schema of this file's database, dropped after its check.
const db = new TestDb();
let pool: ReturnType<TestDb["pool"]>;
beforeAll(async () => {
  await db.init();
  pool = db.pool({ max: 6 });
});
afterAll(() => db.closeAll());
let n = 0;

runConformance(
  {
    name: "postgres",
    async create() {
      // The pool is shared: closing a store leaves a pool it was handed open.
      const store = new PostgresStore(pool, { schema: `conformance_${++n}` });
      await store.setup();
      return store;
    },
    async teardown(subject) {
      const store = subject as PostgresStore;
      await pool.query(`DROP SCHEMA IF EXISTS "${store.schema}" CASCADE`);
    },
  },
  // Crash injection runs in test/crash.test.ts: its children need a factory module and a database of
  // their own, which this file's in-process pool cannot give them.
  { name: "postgres", crash: false },
);
