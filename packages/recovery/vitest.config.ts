import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("recovery", { testTimeout: 120_000 });
// One PostgreSQL server for the whole run, shared by every test file (each makes its own database).
config.test!.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup.ts", import.meta.url))];
// Keep only what Node should see (pg breaks when require() is steered to ESM builds).
config.ssr!.resolve!.conditions = ["dev-source", "node"];
export default config;
