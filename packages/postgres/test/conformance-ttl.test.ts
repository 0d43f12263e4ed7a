import { runConformance } from "@resumable/conformance";
import { afterAll, beforeAll } from "vitest";

import { PostgresStore } from "../src/index.js";
import { TestDb } from "./helpers.js";

// The contract categories and LangChain's validation cases with whole-thread TTL on (an hour, reads
// refreshing it): the expiry row each write moves and the live-thread condition on every read change
// nothing a saver can observe while threads are live. Every store lives in its own schema.
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
    name: "postgres-ttl",
    async create() {
      const store = new PostgresStore(pool, { schema: `conformance_ttl_${++n}`, ttlSeconds: 3600, refreshOnRead: true });
      await store.setup();
      return store;
    },
    async teardown(subject) {
      await pool.query(`DROP SCHEMA IF EXISTS "${(subject as PostgresStore).schema}" CASCADE`);
    },
  },
  { name: "postgres-ttl", crash: false },
);
