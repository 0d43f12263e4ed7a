import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

import { SCHEMA_VERSION } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const hammer = join(packageDir, "test/fixtures/hammer.ts");

function runChild(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", hammer, ...args], { cwd: packageDir });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Two processes set up and write one fresh file at the same time; returns what each reported. */
async function race(count: number, busyTimeoutMs: number) {
  const dir = tempDir();
  const barrier = join(dir, "barrier");
  mkdirSync(barrier);
  const path = join(dir, "shared.db");
  const results = await Promise.all(["one", "two"].map((name) => runChild([path, barrier, name, String(count), String(busyTimeoutMs)])));
  for (const result of results) expect(result.code, result.stderr).toBe(0);
  return { path, reports: results.map((r) => JSON.parse(r.stdout) as { done: number; errors: string[] }) };
}

describe("two processes on one file", () => {
  it('set up and write different threads at once without a single "database is locked"', async () => {
    const count = 80;
    const { path, reports } = await race(count, 5000);
    expect(reports.flatMap((r) => r.errors)).toEqual([]);
    expect(reports.map((r) => r.done)).toEqual([count, count]);
    const db = new Database(path, { readonly: true });
    expect(db.prepare("SELECT count(*) AS n FROM resumable_checkpoints").get()).toEqual({ n: 2 * count });
    expect(db.prepare("SELECT count(*) AS n FROM resumable_writes").get()).toEqual({ n: 2 * count });
    expect(db.prepare("SELECT count(*) AS n FROM resumable_migrations").get()).toEqual({ n: SCHEMA_VERSION });
    db.close();
  }, 120_000);
});
