import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { PostgresSaver, SCHEMA_VERSION } from "../src/index.js";
import { TestDb } from "./helpers.js";

const run = promisify(execFile);
const tsx = createRequire(import.meta.url).resolve("tsx");
const worker = fileURLToPath(new URL("./fixtures/worker.ts", import.meta.url));

/** Runs the worker in a fresh Node process that loads workspace packages from their TypeScript sources. */
async function child(...args: string[]): Promise<{ errors: string[]; done?: number }> {
  const { stdout } = await run(process.execPath, ["--conditions", "dev-source", "--import", tsx, worker, ...args], {
    timeout: 120_000,
    cwd: fileURLToPath(new URL("..", import.meta.url)),
  });
  return JSON.parse(stdout.trim().split("\n").at(-1)!);
}

const db = new TestDb();
beforeAll(() => db.init());
afterAll(() => db.closeAll());

describe("several processes on one database", () => {
  it("migrate once when three processes call setup() on five connections each, with zero errors", async () => {
    const schema = "concurrent_setup";
    const results = await Promise.all([1, 2, 3].map(() => child("setup", db.url, schema, "5")));
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    const { rows } = await db.pool().query(`SELECT version FROM ${schema}.resumable_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1));
  });

  it("write different threads under load with zero errors and every run recorded", async () => {
    const setup = await PostgresSaver.connect(db.url);
    await setup.close();
    const [threads, runs] = [8, 5];
    const results = await Promise.all(["p1", "p2"].map((prefix) => child("load", db.url, prefix, String(threads), String(runs))));
    expect(results.flatMap((r) => r.errors)).toEqual([]);
    expect(results.map((r) => r.done)).toEqual([threads * runs, threads * runs]);
    const saver = await PostgresSaver.connect(db.url, { setup: false });
    try {
      for (const prefix of ["p1", "p2"]) {
        for (let t = 0; t < threads; t++) {
          const tuple = await saver.getTuple({ configurable: { thread_id: `${prefix}-${t}` } });
          // Each run appends its input and one entry per node.
          expect((tuple?.checkpoint.channel_values as { log: string[] }).log).toHaveLength(runs * 3);
        }
      }
    } finally {
      await saver.close();
    }
  });
});
