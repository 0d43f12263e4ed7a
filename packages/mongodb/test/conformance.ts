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

export function mongoConformance(handler: FerretDbHandler): void {
  const server = new TestServer(handler);
  beforeAll(() => server.init());
  afterAll(() => server.closeAll());
  runConformance(
    {
      name: `mongodb-${handler}`,
      async create() {
        // The client is shared: closing a store leaves a client it was handed open.
        const store = new MongoDBStore(server.client, { dbName: await server.database("conf") });
        await store.setup();
        return store;
      },
      async teardown(subject) {
        await server.drop((subject as MongoDBStore).db.databaseName);
      },
    },
    // Crash injection runs in crash-*.test.ts: its children need a factory module.
    { name: `mongodb-${handler}`, crash: false },
  );
}
