/**
 * The conformance suite on one FerretDB handler: our contract categories and LangChain's validation
 * suite. Each store the suite asks for gets a database of its own (FerretDB scans whole collections,
 * so small databases keep the checks fast), dropped after its check.
 */
import { runConformance } from "@resumable/conformance";
import type { FerretDbHandler } from "@resumable/test-servers";
import { afterAll, beforeAll } from "vitest";

import { MongoDBStore } from "../src/index.js";
import { TestServer } from "./helpers.js";

/**
 * With `manyWorkers`, only the categories the option adds (leases, thread status, thread listing) and
 * retention (whose removals are fenced and change the status with it) run:
 * every other category runs, with the option off, in conformance-{sqlite,postgresql}.test.ts.
 */
export function mongoConformance(handler: FerretDbHandler, options: { manyWorkers?: boolean } = {}): void {
  const manyWorkers = options.manyWorkers === true;
  const server = new TestServer(handler);
  beforeAll(() => server.init());
  afterAll(() => server.closeAll());
  runConformance(
    {
      name: `mongodb-${handler}${manyWorkers ? "-many-workers" : ""}`,
      async create() {
        // The client is shared: closing a store leaves a client it was handed open.
        const store = new MongoDBStore(server.client, { dbName: await server.database(manyWorkers ? "confmw" : "conf"), ...(manyWorkers ? { manyWorkers } : {}) });
        await store.setup();
        return store;
      },
      async teardown(subject) {
        await server.drop((subject as MongoDBStore).db.databaseName);
      },
    },
    // Crash injection runs in crash-*.test.ts: its children need a factory module.
    manyWorkers
      ? { name: `mongodb-${handler} (manyWorkers)`, crash: false, langchain: false, categories: ["leases", "thread-status", "thread-listing", "retention"] }
      : { name: `mongodb-${handler}`, crash: false },
  );
}
