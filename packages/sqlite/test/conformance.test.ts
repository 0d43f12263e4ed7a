// The whole conformance suite against SQLite files: our contract categories, LangChain's validation
// cases, and crash injection (sampled here; conformance/test/crash.test.ts runs every kill point).
import { fileURLToPath } from "node:url";

import { runConformance } from "@resumable/conformance";

import factory from "./fixtures/conformance-factory.js";

runConformance(factory, {
  name: "sqlite",
  crash: { factoryModule: fileURLToPath(new URL("./fixtures/conformance-factory.ts", import.meta.url)), quick: true },
});
