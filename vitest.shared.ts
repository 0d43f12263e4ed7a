import { defineConfig } from "vitest/config";

/**
 * Settings every package's vitest config starts from: workspace packages resolve to their TypeScript
 * sources through the `dev-source` export condition, so tests never need a build first.
 */
export function packageConfig(name: string, overrides: { testTimeout?: number; globals?: boolean; include?: string[] } = {}) {
  const conditions = ["dev-source", "import", "module", "node", "default"];
  return defineConfig({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ["dev-source"] } },
    test: {
      name,
      include: overrides.include ?? ["test/**/*.test.ts", "src/**/*.test.ts"],
      testTimeout: overrides.testTimeout ?? 30_000,
      hookTimeout: 120_000,
      globals: overrides.globals ?? false,
    },
  });
}
