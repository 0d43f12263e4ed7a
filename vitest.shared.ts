import { defineConfig } from "vitest/config";

/**
 * Settings every package's vitest config starts from: workspace packages resolve to their TypeScript
 * sources through the `dev-source` export condition, so tests never need a build first.
 */
export function packageConfig(name: string, overrides: { testTimeout?: number; globals?: boolean; include?: string[] } = {}) {
  const conditions = ["dev-source", "import", "module", "node", "default"];
  return defineConfig({
    resolve: { conditions },
    // Workers get these as `node --conditions`; "import" there would also apply to require() and load
    // ESM builds into CommonJS packages (pg-pool breaks), so only our own condition and "node".
    ssr: { resolve: { conditions: ["dev-source", "node"], externalConditions: ["dev-source"] } },
    test: {
      name,
      include: overrides.include ?? ["test/**/*.test.ts", "src/**/*.test.ts"],
      testTimeout: overrides.testTimeout ?? 30_000,
      hookTimeout: 120_000,
      globals: overrides.globals ?? false,
    },
  });
}
