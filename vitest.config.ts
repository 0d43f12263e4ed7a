import { availableParallelism } from "node:os";

import { defineConfig } from "vitest/config";

// One `vitest run` at the root runs every package's tests; each package has its own config so that
// it can also be run alone (`pnpm --filter @resumable/sqlite exec vitest run`).
export default defineConfig({
  test: {
    // Vitest's default is one worker fewer than the CPUs: one on the two-core machines CI runs on,
    // where the files then ran one after another (34 minutes of tests). Most of a database test's
    // time is spent waiting on a server or on child processes, so two files at once overlap well:
    // 28 minutes for the same run. Every file has its own databases, keys and tables.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: ["packages/*/vitest.config.ts", "{conformance,bench}/vitest.config.ts", "examples/*/vitest.config.ts"],
  },
});
