import { runConformance } from "@resumable/conformance";
import { afterAll } from "vitest";

import { RedisStore } from "../src/index.js";
import { TestClients, prefix } from "./helpers.js";

// The whole conformance suite, LangChain's validation suite included, on standalone Redis 7. Every
// store the suite asks for gets its own key prefix on the shared server.
const clients = new TestClients();
afterAll(() => clients.closeAll());

runConformance(
  {
    name: "redis",
    async create() {
      const store = new RedisStore(await clients.standalone(), { keyPrefix: prefix("conformance") });
      await store.setup();
      return store;
    },
  },
  // Crash injection runs in test/crash.test.ts: its children need a factory module.
  { name: "redis", crash: false },
);
