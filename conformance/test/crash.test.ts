import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { formatCrashReport, runCrashSuite } from "../src/crash/index.js";

// The suite on real databases, and on broken stores built on them, runs in each backend package
// (packages/sqlite/test/crash-suite.test.ts): the suite itself names no backend.
const here = dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => join(here, "crash-fixtures", `${name}.ts`);

describe("crash injection", () => {
  it("says the in-memory store is not applicable, never that it passed", async () => {
    const report = await runCrashSuite({ factoryModule: fixture("memory-store"), graphs: ["linear"], modes: ["sync"] });
    expect(report.applicable).toBe(false);
    expect(report.cells.map((c) => c.status)).toEqual(["not applicable"]);
    expect(report.passed).toBe(0);
    expect(formatCrashReport(report)).toMatch(/MemoryStore: not applicable/);
  });
});
