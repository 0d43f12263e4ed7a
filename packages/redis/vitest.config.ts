import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("redis", { globals: true, testTimeout: 60_000 });
// One standalone Redis and one three-node cluster for the whole run, shared by every test file
// (each isolates itself by key prefix). Fault tests start servers of their own.
config.test!.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup-redis.ts", import.meta.url))];
export default config;
