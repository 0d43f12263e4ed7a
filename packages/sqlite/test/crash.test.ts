import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, describe, expect, it } from "vitest";

import { SqliteStore } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const child = join(packageDir, "test/fixtures/crash-put.ts");

// BEGIN IMMEDIATE, 2 chunks, 2 blobs, the checkpoint, COMMIT.
const COMMANDS = 7;

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
  const path = join(tempDir(), `crash-${k}.db`);
  const setup = new SqliteStore(path);
  await setup.setup();
  await setup.close();
  const run = await runChild(path, k);
  expect(run.signal, `k=${k}: ${run.output}`).toBe("SIGKILL");
  const store = new SqliteStore(path);
  const got = await store.getCheckpoint({ threadId: "crash", checkpointNs: "" });
  const blobs = await store.getBlobs({ threadId: "crash", checkpointNs: "" }, [
    { channel: "a", version: "1" },
    { channel: "b", version: "1" },
  ]);
  const chunks = await store.getChunks("crash", ["h"]);
  await store.close();
  return `${got ? "checkpoint" : "-"}/${blobs.length} blobs/${chunks.length} chunks`;
}

describe("SIGKILL during putCheckpoint", () => {
  // Every k is the crash suite's job (conformance); here: mid-transaction, the last statement before
  // COMMIT, and right after COMMIT.
  it("leaves the checkpoint absent when the process dies before COMMIT, and whole after it", async () => {
    const [middle, beforeCommit, afterCommit] = await Promise.all([3, COMMANDS - 1, COMMANDS].map(crashAfter));
    expect({ middle, beforeCommit, afterCommit }).toEqual({
      middle: "-/0 blobs/0 chunks",
      beforeCommit: "-/0 blobs/0 chunks",
      afterCommit: "checkpoint/2 blobs/2 chunks",
    });
  }, 120_000);
});
