import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("dynamodb", { globals: true, testTimeout: 60_000 });
// Both emulators once for the whole run (dynalite in vitest's main process, moto's server), shared by
// every test file; each file and each store the suites ask for gets its own table.
config.test!.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup-dynamodb.ts", import.meta.url))];
// The pinned AWS SDK warns once per process that its releases from 2027 on need Node 22; noise here.
config.test!.env = { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" };
export default config;
