import { defineConfig } from "vitest/config";

// One `vitest run` at the root runs every package's tests; each package has its own config so that
// it can also be run alone (`pnpm --filter @resumable/sqlite exec vitest run`).
export default defineConfig({
  test: {
    projects: ["packages/*/vitest.config.ts", "{conformance,bench}/vitest.config.ts", "examples/*/vitest.config.ts"],
  },
});
