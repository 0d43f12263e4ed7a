import { packageConfig } from "../vitest.shared.js";

// The smoke test runs the whole benchmark at tiny sizes: give it room on a loaded 2-core machine.
const config = packageConfig("bench", { testTimeout: 300_000 });
// vitest hands ssr.resolve.conditions to its workers as `node --conditions`, where "import" also
// steers require() to ESM builds (pg-pool's), breaking pg. Keep only what Node should see.
config.ssr!.resolve!.conditions = ["dev-source", "node"];
export default config;
