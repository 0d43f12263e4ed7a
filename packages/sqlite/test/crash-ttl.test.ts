// SIGKILL at every statement of a TTL sweep: the expired thread is whole (every row, still expired, so
// still hidden) or gone (no row), and a later sweep finishes the job. The sweep deletes a thread in
// one BEGIN IMMEDIATE transaction, so the commit is the only point where it changes.
import { spawn } from "node:child_process";
import { join } from "node:path";

import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

import { SqliteStore } from "../src/index.js";
import { blob, cid, record, removeTempDirs, tempDir, write } from "./helpers.js";

afterAll(removeTempDirs);

const packageDir = join(import.meta.dirname, "..");
const child = join(packageDir, "test/fixtures/crash-sweep.ts");
// SELECT expired threads, BEGIN IMMEDIATE, DELETE expiry, checkpoints, blobs, writes, chunks, status, COMMIT.
const COMMANDS = 9;
const TABLES = ["resumable_checkpoints", "resumable_blobs", "resumable_writes", "resumable_chunks", "resumable_threads", "resumable_thread_expiry"];

function runChild(path: string, k: number): Promise<{ signal: NodeJS.Signals | null; output: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", child, path, String(k)], { cwd: packageDir });
    let output = "";
    proc.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    proc.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    proc.on("error", reject);
    proc.on("close", (_code, signal) => resolve({ signal, output }));
  });
}

async function crashAfter(k: number): Promise<string> {
  const path = join(tempDir(), `sweep-${k}.db`);
  const store = new SqliteStore(path, { ttlSeconds: 3600 });
  await store.setup();
  for (let i = 0; i < 2; i++) {
    await store.putCheckpoint({
      record: record("t", cid(i), { parentCheckpointId: i === 0 ? undefined : cid(0), channelVersions: { a: String(i + 1) } }),
      blobs: [blob("a", String(i + 1))],
      chunks: [{ hash: `h${i}`, index: 0, data: new Uint8Array([i]) }],
      status: { state: "done", updatedAt: i },
    });
    await store.putWrites({ threadId: "t", checkpointNs: "", checkpointId: cid(i), writes: [write("task", 0, "a", i)], chunks: [], mode: "ignore" });
  }
  await store.close();
  const db = new Database(path);
  db.prepare("UPDATE resumable_thread_expiry SET expires_at = ?").run(Date.now() - 1000);
  db.close();
  const run = await runChild(path, k);
  expect(run.signal, `k=${k}: ${run.output}`).toBe("SIGKILL");
  const after = new Database(path);
  const counts = TABLES.map((t) => (after.prepare(`SELECT count(*) AS n FROM ${t} WHERE thread_id = 't'`).get() as { n: number }).n).join(",");
  after.close();
  const state = counts === "0,0,0,0,0,0" ? "gone" : counts === "2,2,2,2,1,1" ? "whole" : `in part: ${counts}`;
  // A later sweep (another process) finishes the job.
  const next = new SqliteStore(path, { ttlSeconds: 3600 });
  const swept = await next.deleteExpiredThreads();
  const left = await next.getCheckpoint({ threadId: "t", checkpointNs: "" });
  await next.close();
  expect(left).toBeUndefined();
  return `${state}, then ${swept}`;
}

describe("SIGKILL during a TTL sweep", () => {
  it("leaves the expired thread whole before COMMIT and gone after it, at every statement", async () => {
    const outcomes: string[] = [];
    // Two at a time: each child is a Node process, and the machine is shared.
    for (let k = 1; k <= COMMANDS; k += 2) outcomes.push(...(await Promise.all([k, k + 1].filter((j) => j <= COMMANDS).map(crashAfter))));
    expect(outcomes).toEqual([...Array.from({ length: COMMANDS - 1 }, () => "whole, then 1"), "gone, then 0"]);
  }, 300_000);
});
