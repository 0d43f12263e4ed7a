// prune on SQLite, counted in the tables themselves rather than through the store's own listing: the
// rows go down by exactly what prune reports, other threads keep every row, and the statements a
// prune costs do not grow with the thread.
import { chatGraph, chatTurns } from "@resumable/conformance";
import { ResumableSaver, type RetentionResult } from "@resumable/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

import { commands, freshStore, removeTempDirs } from "./helpers.js";

afterAll(removeTempDirs);

/** Rows per table for one thread; chunks as (hash, index) pairs, since a chunk is stored in parts. */
function rows(path: string, threadId: string): { checkpoints: number; writes: number; blobs: number; chunks: number } {
  const db = new Database(path, { readonly: true });
  try {
    const count = (sql: string) => (db.prepare(sql).get(threadId) as { n: number }).n;
    return {
      checkpoints: count("SELECT count(*) AS n FROM resumable_checkpoints WHERE thread_id = ?"),
      writes: count("SELECT count(*) AS n FROM resumable_writes WHERE thread_id = ?"),
      blobs: count("SELECT count(*) AS n FROM resumable_blobs WHERE thread_id = ?"),
      chunks: count("SELECT count(*) AS n FROM (SELECT DISTINCT hash, idx FROM resumable_chunks WHERE thread_id = ?)"),
    };
  } finally {
    db.close();
  }
}

function minus(before: ReturnType<typeof rows>, removed: RetentionResult): ReturnType<typeof rows> {
  return { checkpoints: before.checkpoints - removed.checkpoints, writes: before.writes - removed.writes, blobs: before.blobs - removed.blobs, chunks: before.chunks - removed.chunks };
}

describe("SqliteStore retention", () => {
  it("removes exactly the rows prune reports, in every table, and no row of another thread", async () => {
    const { store, path } = await freshStore();
    const saver = new ResumableSaver(store);
    for (const kind of ["plain", "delta", "subgraph"] as const) {
      const thread = `t-${kind}`;
      const other = `other-${kind}`;
      await chatTurns(chatGraph(kind, saver), thread, 0, 6);
      await chatTurns(chatGraph(kind, saver), other, 0, 3);
      const before = rows(path, thread);
      const otherBefore = rows(path, other);
      const removed = await saver.prune([thread], { keepLast: 2 });
      expect(removed.checkpoints, kind).toBeGreaterThan(0);
      expect(removed.writes, kind).toBeGreaterThan(0);
      expect(removed.blobs, kind).toBeGreaterThan(0);
      expect(rows(path, thread), kind).toEqual(minus(before, removed));
      expect(rows(path, other), kind).toEqual(otherBefore);
    }
    await store.close();
  });

  it("removes with a rolled-back run the rows of the pieces (messages) only that run held", async () => {
    const { store, path } = await freshStore();
    const saver = new ResumableSaver(store);
    await chatTurns(chatGraph("plain", saver), "rolled", 0, 6);
    const before = rows(path, "rolled");
    const removed = await saver.deleteForRuns(["run-4", "run-5"]);
    expect(removed.chunks).toBeGreaterThan(0);
    expect(rows(path, "rolled")).toEqual(minus(before, removed));
    await store.close();
  });

  it("prunes a thread in the same number of statements whatever its length", async () => {
    const { store } = await freshStore();
    const saver = new ResumableSaver(store);
    const counts: number[] = [];
    for (const turns of [3, 12]) {
      const thread = `t-${turns}`;
      await chatTurns(chatGraph("delta", saver), thread, 0, turns);
      const seen = await commands(store, () => saver.prune([thread], { keepLast: 2 }));
      counts.push(seen.length);
    }
    // BEGIN, four selects, COMMIT; BEGIN IMMEDIATE, the deletes, COMMIT.
    expect(counts[0]).toBe(counts[1]);
    expect(counts[0]).toBeLessThanOrEqual(12);
    await store.close();
  });
});
