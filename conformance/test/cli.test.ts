// The CLI, run as a user runs it: the built bin (through the shim pnpm installs in the example's
// node_modules/.bin), on the example's store, a broken store and a module without a factory.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const conformanceDir = resolve(import.meta.dirname, "..");
const coreDir = resolve(conformanceDir, "../packages/core");
const exampleDir = resolve(conformanceDir, "../examples/custom-store");
const bin = join(exampleDir, "node_modules/.bin/resumable-conformance");
const buildScript = resolve(conformanceDir, "../scripts/build-package.mjs");
const tmp = mkdtempSync(join(tmpdir(), "conformance-cli-"));

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds a package unless its dist is newer than its sources (CI builds before testing). */
function ensureBuilt(dir: string, entry: string): void {
  const built = join(dir, entry);
  if (existsSync(built) && statSync(built).mtimeMs >= newestMtime(join(dir, "src"))) return;
  const result = spawnSync(process.execPath, [buildScript], {
    cwd: dir,
    encoding: "utf8",
  });
  // The ESM pass is what the bin runs; fail only when it did not produce a fresh entry point.
  if (!existsSync(built) || statSync(built).mtimeMs < newestMtime(join(dir, "src"))) {
    throw new Error(`building ${dir} failed:\n${result.stdout}\n${result.stderr}`);
  }
}

/** The environment of a user's shell: nothing of the vitest run this test is part of. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("VITEST") && k !== "NODE_OPTIONS" && k !== "TEST") env[k] = v;
  return env;
}

function run(args: string[]) {
  return spawnSync(bin, args, { cwd: exampleDir, encoding: "utf8", env: userEnv(), timeout: 300_000 });
}

beforeAll(() => {
  ensureBuilt(coreDir, "dist/esm/index.js");
  ensureBuilt(conformanceDir, "dist/esm/cli.js");
}, 300_000);

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("resumable-conformance", () => {
  it("runs the example store and prints a passing report, with LangChain's suite", { timeout: 300_000 }, () => {
    const json = join(tmp, "report.json");
    const crashJson = join(tmp, "crash.json");
    const result = run(["./src/conformance.ts", "--only", "write-rules,delete-thread", "--json", json, "--quick", "--crash-json", crashJson]);
    expect(result.stderr).not.toMatch(/resumable-conformance: /);
    expect(result.stdout).toContain("Resumable conformance report: json-file (CheckpointStore)");
    expect(result.stdout).toMatch(/PASS {2}write-rules/);
    expect(result.stdout).toMatch(/PASS {2}delete-thread/);
    expect(result.stdout).toMatch(/LangChain validation suite .*: PASSED \(\d{3} passed, 0 failed/);
    expect(result.stdout).toMatch(/Crash injection .*: PASSED \(\d+ kill points passed, 0 failed, sampled/);
    expect(result.stdout).toMatch(/PASS {2}crash:interrupt/);
    expect(result.stdout).toContain("Result: PASSED");
    expect(result.status).toBe(0);
    const report = JSON.parse(readFileSync(json, "utf8"));
    expect(report.status).toBe("passed");
    expect(report.sections.map((s: { id: string }) => s.id)).toEqual(["contract", "langchain", "crash"]);
    const matrix = JSON.parse(readFileSync(crashJson, "utf8"));
    expect(matrix.store).toBe("json-file");
    expect(matrix.rows).toHaveLength(18);
    expect(matrix.cells.every((c: { status: string }) => c.status === "pass")).toBe(true);
  });

  it("reports the broken rule and exits 1 on a broken store", { timeout: 300_000 }, () => {
    const result = run([join(conformanceDir, "test/cli-fixtures/ignores-upsert-store.ts"), "--only", "write-rules", "--no-langchain"]);
    expect(result.stdout).toMatch(/FAIL {2}write-rules/);
    expect(result.stdout).toContain("INTERRUPT then RESUME");
    expect(result.stdout).toContain("skipped: --no-langchain was given");
    // An in-memory store cannot outlive a crash: the report says so, and never that it passed.
    expect(result.stdout).toMatch(/Crash injection .*: SKIPPED \(not applicable\)/);
    expect(result.stdout).toMatch(/skipped: not applicable: .* does not outlive its process/);
    expect(result.stdout).toContain("Result: FAILED");
    expect(result.status).toBe(1);
  });

  it("explains what it expected and exits 2 when the module exports no factory", { timeout: 60_000 }, () => {
    const result = run([join(conformanceDir, "test/cli-fixtures/no-factory.mjs")]);
    expect(result.stderr).toMatch(/default-export\) a function returning a fresh store or saver/);
    expect(result.status).toBe(2);
  });
});
