/**
 * Runs LangChain's validation suite from outside vitest (the CLI), through vitest's Node API, and
 * turns its results into a report section.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { TestModule } from "vitest/node";

import type { CategoryResult, CheckResult, ReportSection } from "./types.js";

/**
 * Once installed, this package lives in node_modules, and vitest runs files from there with Node's own
 * loader, which cannot import the user's `.ts` module. Inlining our files makes vitest transform the
 * entry, so its `import()` of the user's module goes through vite, as it does from a workspace link.
 */
const INLINE_OWN_FILES = /[\\/]@resumable[\\/]conformance[\\/]/;

function entryFile(dir: string): string {
  for (const ext of [".js", ".ts"]) {
    const file = join(dir, `langchain-entry${ext}`);
    if (existsSync(file)) return file;
  }
  throw new Error("langchain-entry.js is missing next to the CLI; reinstall @resumable/conformance.");
}

/** Results of LangChain's suite, grouped by its top-level method (put, list, getTuple...). */
function toCategories(modules: ReadonlyArray<TestModule>): CategoryResult[] {
  const groups = new Map<string, CheckResult[]>();
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const result = test.result();
      const status = result.state === "passed" ? "passed" : result.state === "failed" ? "failed" : "skipped";
      // Full names look like "resumable:x > resumable:x#put > namespace: root > ...": group by method.
      const method = /#(\w+)/.exec(test.fullName)?.[1] ?? "suite";
      const errors = result.state === "failed" ? result.errors.map((e) => e.message).join("\n") : undefined;
      const list = groups.get(method) ?? [];
      list.push({ name: test.fullName, status, error: errors, reason: status === "skipped" ? (result as { note?: string }).note ?? "skipped by LangChain's suite" : undefined, durationMs: Math.round(test.diagnostic()?.duration ?? 0) });
      groups.set(method, list);
    }
    for (const error of module.errors()) {
      const list = groups.get("suite") ?? [];
      list.push({ name: `loading ${module.moduleId}`, status: "failed", error: error.message, durationMs: 0 });
      groups.set("suite", list);
    }
  }
  return [...groups].map(([method, checks]) => {
    const status = checks.some((c) => c.status === "failed") ? "failed" : checks.every((c) => c.status === "skipped") ? "skipped" : "passed";
    // Only failures are worth listing one by one; passing cases are counted.
    return { id: `langchain-${method}`, title: `LangChain validation: ${method}`, status, checks };
  });
}

/**
 * Runs `validate()` and `deltaChannelHistoryTests()` from `@langchain/langgraph-checkpoint-validation`
 * on the module's factory, in a vitest instance of its own with `globals: true`. `entryDir` is the
 * directory holding `langchain-entry.js` (the CLI's own).
 */
export async function runLangchainSection(modulePath: string, name: string, entryDir: string): Promise<ReportSection> {
  const { startVitest } = await import("vitest/node");
  const entry = entryFile(entryDir);
  let modules: ReadonlyArray<TestModule> = [];
  const vitest = await startVitest(
    "test",
    [],
    {
      watch: false,
      config: false,
      root: dirname(entry),
      dir: dirname(entry),
      include: [entry.replace(/\\/g, "/")],
      exclude: [],
      globals: true,
      server: { deps: { inline: [INLINE_OWN_FILES] } },
      passWithNoTests: false,
      testTimeout: 120_000,
      hookTimeout: 120_000,
      provide: { RESUMABLE_CONFORMANCE: { modulePath, name } },
      reporters: [
        {
          onTestRunEnd(testModules: ReadonlyArray<TestModule>) {
            modules = testModules;
          },
        },
      ],
    },
    // vite's cache would land in `root`, inside the installed package (read-only there, and shipped
    // with the tarball when the CLI ran in the package's own directory before `pnpm pack`).
    { server: { watch: null }, logLevel: "error", cacheDir: join(tmpdir(), "resumable-conformance-vite") },
  );
  await vitest.close();
  const categories = toCategories(modules);
  const all = categories.flatMap((c) => c.checks);
  const count = (s: CheckResult["status"]) => all.filter((c) => c.status === s).length;
  for (const c of categories) {
    const n = (s: CheckResult["status"]) => c.checks.filter((k) => k.status === s).length;
    c.summary = `${n("passed")} passed${n("failed") ? `, ${n("failed")} failed` : ""}${n("skipped") ? `, ${n("skipped")} skipped` : ""}`;
    c.checks = c.checks.filter((k) => k.status !== "passed");
  }
  return {
    id: "langchain",
    title: "LangChain validation suite (@langchain/langgraph-checkpoint-validation)",
    status: all.length === 0 || count("failed") > 0 ? "failed" : "passed",
    summary: all.length === 0 ? "no case ran" : `${count("passed")} passed, ${count("failed")} failed, ${count("skipped")} skipped`,
    categories,
  };
}
