import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("test-servers");
// The same wiring a backend's tests use: one server of each kind for the whole run, provided to every
// test file. (test/processes.test.ts covers finding and starting them without it.) PostgreSQL comes
// first so that FerretDB's PostgreSQL handler reuses its server.
config.test!.globalSetup = ["vitest-global-setup", "vitest-global-setup-redis", "vitest-global-setup-dynamodb", "vitest-global-setup-mongodb"].map(
  (name) => fileURLToPath(new URL(`./src/${name}.ts`, import.meta.url)),
);
// The pinned AWS SDK warns once per process that its releases from 2027 on need Node 22; noise here.
config.test!.env = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" };
// vitest hands ssr.resolve.conditions to its worker processes as `node --conditions`, where "import"
// also steers require() to ESM builds (pg-pool's), breaking pg. Keep only what Node should see.
config.ssr!.resolve!.conditions = ["dev-source", "node"];
export default config;
