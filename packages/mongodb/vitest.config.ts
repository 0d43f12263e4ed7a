import { fileURLToPath } from "node:url";
import { packageConfig } from "../../vitest.shared.js";

const setup = (name: string) => fileURLToPath(new URL(`../test-servers/src/${name}.ts`, import.meta.url));
const config = packageConfig("mongodb", { globals: true, testTimeout: 60_000 });
// One FerretDB per handler for the whole run, shared by every test file (each uses databases of its
// own). PostgreSQL comes first: FerretDB's PostgreSQL handler runs on that server.
config.test!.globalSetup = [setup("vitest-global-setup"), setup("vitest-global-setup-mongodb")];
export default config;
