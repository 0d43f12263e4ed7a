/**
 * Waiting for another process's write lock never freezes the event loop, ends in a typed error that
 * names the file and the timeout, and the bad-path cases fail at connect with a clear error.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";

import Database from "better-sqlite3";
import { InvalidConfigError, StoreBusyError, StoreReadOnlyError } from "@resumable/core";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, describe, expect, it } from "vitest";

import { SqliteSaver } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

/** A child process that takes the file's write lock, says so, and holds it for `holdMs`. */
async function holdWriteLock(path: string, holdMs: number): Promise<ChildProcess> {
  const script = `
    const Database = require("better-sqlite3");
    const db = new Database(${JSON.stringify(path)});
    db.exec("BEGIN IMMEDIATE");
    process.stdout.write("locked\\n");
    setTimeout(() => { db.exec("COMMIT"); db.close(); process.exit(0); }, ${holdMs});
  `;
  const child = spawn(process.execPath, ["-e", script], { cwd: join(import.meta.dirname, "..") });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("locked")) resolve();
    });
    child.on("error", reject);
    child.on("exit", (code) => reject(new Error(`the lock holder exited early with ${code}`)));
  });
  return child;
}

function checkpoint(step: number) {
  return { ...emptyCheckpoint(), id: uuid6(step), channel_values: { n: step }, channel_versions: { n: step + 1 } };
}

const meta = { source: "loop" as const, step: 0, parents: {} };

describe("a write waiting for another process's lock", () => {
  it("keeps the event loop running while it waits, then succeeds", async () => {
    const path = join(tempDir(), "locked.db");
    const saver = await SqliteSaver.connect(path, { busyTimeoutMs: 10_000 });
    const child = await holdWriteLock(path, 2000);
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 50);
    const started = Date.now();
    try {
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpoint(0), meta, { n: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
      expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ n: 0 });
    } finally {
      clearInterval(timer);
      child.kill();
      await saver.close();
    }
    expect(ticks).toBeGreaterThanOrEqual(30);
  }, 30_000);

  it("fails with StoreBusyError naming the file and the timeout, and writes nothing", async () => {
    const path = join(tempDir(), "busy.db");
    const saver = await SqliteSaver.connect(path, { busyTimeoutMs: 300 });
    const child = await holdWriteLock(path, 2000);
    try {
      const err = await saver.put({ configurable: { thread_id: "t" } }, checkpoint(0), meta, { n: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreBusyError);
      expect((err as Error).message).toContain(path);
      expect((err as Error).message).toContain("300 ms");
    } finally {
      child.kill();
    }
    await new Promise((resolve) => child.once("exit", resolve));
    expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined();
    await saver.close();
  }, 30_000);
});

describe("bad databases fail at connect, with the reason", () => {
  it("an empty path is refused instead of opening a throwaway temporary database", async () => {
    await expect(SqliteSaver.connect("")).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(SqliteSaver.connect("  ")).rejects.toThrow(/":memory:"/);
  });

  it("a read-only database fails at setup with StoreReadOnlyError, not at the first put", async () => {
    const path = join(tempDir(), "ro.db");
    await (await SqliteSaver.connect(path)).close();
    const db = new Database(path, { readonly: true });
    const err = await SqliteSaver.connect(db).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreReadOnlyError);
    expect((err as Error).message).toContain(path);
    db.close();
  });
});
