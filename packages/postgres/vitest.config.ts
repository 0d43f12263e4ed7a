import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("postgres", { globals: true, testTimeout: 60_000 });
// One PostgreSQL server for the whole run, shared by every test file (each makes its own database).
config.test!.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup.ts", import.meta.url))];
// vitest passes ssr.resolve.conditions to its workers as `node --conditions`; "import" there also
// steers require() to ESM builds (pg-pool's), which breaks pg. Keep only what Node should see.
config.ssr!.resolve!.conditions = ["dev-source", "node"];
export default config;
