import { packageConfig } from "../../vitest.shared.js";

const config = packageConfig("test-servers");
// vitest hands ssr.resolve.conditions to its worker processes as `node --conditions`, where "import"
// also steers require() to ESM builds (pg-pool's), breaking pg. Keep only what Node should see.
config.ssr!.resolve!.conditions = ["dev-source", "node"];
export default config;
