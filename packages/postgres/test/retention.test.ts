// prune on PostgreSQL, counted in the tables themselves rather than through the store's own listing:
// the rows go down by exactly what prune reports, other threads keep every row, and a prune costs two
// round trips (the listing, the removal) whatever the thread's length.
import { chatGraph, chatTurns } from "@resumable/conformance";
import { ResumableSaver, type RetentionResult } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PostgresStore } from "../src/index.js";
import { TestDb, countingPool } from "./helpers.js";

const db = new TestDb();
let pool: ReturnType<TestDb["pool"]>;
beforeAll(async () => {
  await db.init();
  pool = db.pool();
});
afterAll(() => db.closeAll());
let schemas = 0;

async function freshStore(inner: ReturnType<TestDb["pool"]> | ReturnType<typeof countingPool>["pool"] = pool): Promise<PostgresStore> {
  const store = new PostgresStore(inner, { schema: `retention_${++schemas}` });
  await store.setup();
  return store;
}

type Rows = { checkpoints: number; writes: number; blobs: number; chunks: number };

async function rows(store: PostgresStore, threadId: string): Promise<Rows> {
  const count = async (table: string) =>
    Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "${store.schema}".resumable_${table} WHERE thread_id = $1`, [threadId])).rows[0]!.n);
  const chunks = Number(
    (await pool.query<{ n: string }>(`SELECT count(*) AS n FROM (SELECT DISTINCT hash, idx FROM "${store.schema}".resumable_chunks WHERE thread_id = $1) AS c`, [threadId])).rows[0]!.n,
  );
  // Chunks as (hash, index) pairs: a chunk may be stored in several rows.
  return { checkpoints: await count("checkpoints"), writes: await count("writes"), blobs: await count("blobs"), chunks };
}

function minus(before: Rows, removed: RetentionResult): Rows {
  return { checkpoints: before.checkpoints - removed.checkpoints, writes: before.writes - removed.writes, blobs: before.blobs - removed.blobs, chunks: before.chunks - removed.chunks };
}

describe("PostgresStore retention", () => {
  it("removes exactly the rows prune reports, in every table, and no row of another thread", async () => {
    const store = await freshStore();
    const saver = new ResumableSaver(store);
    for (const kind of ["plain", "delta", "subgraph"] as const) {
      const thread = `t-${kind}`;
      const other = `other-${kind}`;
      await chatTurns(chatGraph(kind, saver), thread, 0, 6);
      await chatTurns(chatGraph(kind, saver), other, 0, 3);
      const before = await rows(store, thread);
      const otherBefore = await rows(store, other);
      const removed = await saver.prune([thread], { keepLast: 2 });
      expect(removed.checkpoints, kind).toBeGreaterThan(0);
      expect(removed.writes, kind).toBeGreaterThan(0);
      expect(removed.blobs, kind).toBeGreaterThan(0);
      expect(await rows(store, thread), kind).toEqual(minus(before, removed));
      expect(await rows(store, other), kind).toEqual(otherBefore);
    }
  });

  it("removes with a rolled-back run the rows of the pieces (messages) only that run held", async () => {
    const store = await freshStore();
    const saver = new ResumableSaver(store);
    await chatTurns(chatGraph("plain", saver), "rolled", 0, 6);
    const before = await rows(store, "rolled");
    const removed = await saver.deleteForRuns(["run-4", "run-5"]);
    expect(removed.chunks).toBeGreaterThan(0);
    expect(await rows(store, "rolled")).toEqual(minus(before, removed));
  });

  it("prunes a thread in two round trips whatever its length", async () => {
    const counter = countingPool(pool);
    const store = await freshStore(counter.pool);
    const saver = new ResumableSaver(store);
    for (const turns of [3, 12]) {
      const thread = `t-${turns}`;
      await chatTurns(chatGraph("delta", saver), thread, 0, turns);
      counter.reset();
      const removed = await saver.prune([thread], { keepLast: 2 });
      expect(removed.checkpoints).toBeGreaterThan(0);
      expect(counter.count(), counter.sql.join("\n")).toBe(2);
    }
  });
});
