import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";

import { PostgresSaver } from "../src/index.js";
import { TestDb, countingPool, threadId } from "./helpers.js";

const db = new TestDb();
beforeAll(() => db.init());
afterAll(() => db.closeAll());

/** Round trips measured here are printed, so the numbers in the README can be checked. */
const measured: Record<string, number> = {};
afterAll(() => console.log(`round trips: ${JSON.stringify(measured)}`));

function checkpoint(id: string, versions: Record<string, number>, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_versions: versions, channel_values: values };
}

describe("round trips to PostgreSQL", () => {
  it("is one per put, putWrites and getTuple, and at most two per getDeltaChannelHistory whatever the depth", async () => {
    const counter = countingPool(db.pool());
    const saver = new PostgresSaver(counter.pool);
    await saver.setup();
    const thread = threadId("rt");
    const measure = async (name: string, body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      measured[name] = Math.max(measured[name] ?? 0, counter.count());
      return counter.count();
    };

    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const depth = 40;
    for (let i = 0; i < depth; i++) {
      const id = `cp-${String(i).padStart(4, "0")}`;
      // Three channels change at every step, so each put carries a checkpoint row and three blobs.
      const values = { a: `a${i}`, b: [i, { deep: "x".repeat(100) }], c: new Uint8Array([i]) };
      const put = await measure("put", async () => {
        config = (await saver.put(config, checkpoint(id, { a: i + 1, b: i + 1, c: i + 1 }, values), { source: "loop", step: i, parents: {} }, { a: i + 1, b: i + 1, c: i + 1 })) as typeof config;
      });
      expect(put).toBe(1);
      const writes = await measure("putWrites", () => saver.putWrites(config, [["a", `w${i}`], ["b", i], ["c", null]], `task-${i}`));
      expect(writes).toBe(1);
    }
    expect(await measure("getTuple", () => saver.getTuple(config))).toBe(1);
    expect(await measure("getTuple (latest)", () => saver.getTuple({ configurable: { thread_id: thread } }))).toBe(1);
    // Every ancestor's blob is a full value here, so the history stops at the parent; ask for a
    // channel that no ancestor seeds to walk the whole chain.
    expect(await measure("getDeltaChannelHistory (by id)", () => saver.getDeltaChannelHistory({ config, channels: ["a", "never-written"] }))).toBe(1);
    expect(await measure("getDeltaChannelHistory (latest)", () => saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["never-written"] }))).toBeLessThanOrEqual(2);
    const history = await saver.getDeltaChannelHistory({ config, channels: ["a"] });
    expect(history.a?.writes.map(([, , value]) => value)).toEqual([`w${depth - 2}`]);
    const listed = await measure("list (40 checkpoints, 50 per page)", async () => {
      let n = 0;
      for await (const _ of saver.list({ configurable: { thread_id: thread } })) n++;
      expect(n).toBe(depth);
    });
    expect(listed).toBe(1);
    expect(await measure("deleteThread", () => saver.deleteThread(thread))).toBe(1);
  });

  it("reads each ancestor's blobs by key while getDeltaChannelHistory walks a chain, not every blob of the thread", async () => {
    // Row counts, not time: PostgreSQL's table statistics say how many rows a statement read. A
    // chain walked to its root (no ancestor seeds the channel asked for) may read the thread's blobs
    // once or twice; a seed test that scans them at every ancestor reads depth x blobs (270,000 here).
    // One connection: table counters are that backend's until it flushes them (forced below).
    const pool = db.pool({ max: 1 });
    const saver = new PostgresSaver(pool);
    await saver.setup();
    const thread = threadId("walk");
    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const depth = 300;
    for (let i = 0; i < depth; i++) {
      const values = { a: `a${i}`.padEnd(100, "."), b: `b${i}`.padEnd(100, "."), c: `c${i}`.padEnd(100, ".") };
      config = (await saver.put(config, checkpoint(`cp-${String(i).padStart(4, "0")}`, { a: i + 1, b: i + 1, c: i + 1 }, values), { source: "loop", step: i, parents: {} }, { a: i + 1, b: i + 1, c: i + 1 })) as typeof config;
    }
    // A backend reports its table counters after a transaction ends, once asked to (PostgreSQL 15);
    // clearing the snapshot makes the next statement read them afresh.
    const rowsRead = async () => {
      await pool.query("SELECT pg_stat_force_next_flush()");
      await pool.query("SELECT pg_stat_clear_snapshot()");
      const { rows } = await pool.query<{ n: string }>(
        "SELECT (COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0))::text AS n FROM pg_stat_user_tables WHERE relname = 'resumable_blobs'",
      );
      return Number(rows[0]!.n);
    };
    const before = await rowsRead();
    const history = await saver.getDeltaChannelHistory({ config, channels: ["never-written"] });
    expect(history["never-written"]?.writes ?? []).toEqual([]);
    const read = (await rowsRead()) - before;
    measured["blob rows read by a 300-deep history walk"] = read;
    expect(read).toBeLessThanOrEqual(2 * 3 * depth);
  });
});
