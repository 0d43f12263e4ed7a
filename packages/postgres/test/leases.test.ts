// Leases and thread status on PostgreSQL beyond the conformance categories: round trips per call, the
// race between a fenced write and a claim that commits while the write waits, and listThreads reading
// the status index.
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { LeaseLostError, ResumableSaver } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PostgresStore } from "../src/index.js";
import { TestDb, countingPool, threadId } from "./helpers.js";

const db = new TestDb();
beforeAll(() => db.init());
afterAll(() => db.closeAll());

function checkpoint(id: string, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, `1${id}`])), channel_values: values };
}
const meta = { source: "loop" as const, step: 0, parents: {} };
const versions = (values: Record<string, unknown>, id: string) => Object.fromEntries(Object.keys(values).map((k) => [k, `1${id}`]));

describe("round trips", () => {
  it("a put with its status is one round trip, with or without a fence; so are putWrites, a claim and a renewal", async () => {
    const counter = countingPool(db.pool());
    const store = new PostgresStore(counter.pool, { schema: "rt_leases" });
    await store.setup();
    const saver = new ResumableSaver(store);
    const thread = threadId("rt");
    const count = async (body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      return counter.count();
    };
    const values = { "branch:to:work": null, n: 1 };
    expect(await count(() => saver.put({ configurable: { thread_id: thread } }, checkpoint("cp-1", values), meta, versions(values, "cp-1")))).toBe(1);
    expect((await saver.getThreadStatus(thread))?.state).toBe("pending");
    let lease: Awaited<ReturnType<ResumableSaver["claimLease"]>>;
    expect(await count(async () => (lease = await saver.claimLease(thread, { workerId: "w", ttlMs: 60_000 })))).toBe(1);
    const fenced = saver.withLease(lease!);
    const done = { n: 2 };
    expect(
      await count(() => fenced.put({ configurable: { thread_id: thread, checkpoint_id: "cp-1" } }, checkpoint("cp-2", done), meta, versions(done, "cp-2"))),
    ).toBe(1);
    expect(await count(() => fenced.putWrites({ configurable: { thread_id: thread, checkpoint_id: "cp-2" } }, [["n", 3]], "task"))).toBe(1);
    expect(await count(() => fenced.putWrites({ configurable: { thread_id: thread, checkpoint_id: "cp-2" } }, [["__error__", { message: "boom" }]], "task-2"))).toBe(1);
    expect(await saver.getThreadStatus(thread)).toMatchObject({ state: "failed", error: "boom", checkpointId: "cp-2" });
    expect(await count(() => saver.renewLease(lease!, 60_000))).toBe(1);
    expect(await count(() => fenced.updateThreadStatus(thread, { checkpointId: "cp-2", addAttempts: 1 }))).toBe(1);
    await store.close();
  });
});

describe("status within the resolution", () => {
  it("a put that keeps the state keeps updatedAt and updates the row in place (HOT): no new status index entry", async () => {
    // One connection, so that the test can make it flush its statistics before reading them.
    const pool = db.pool({ max: 1 });
    const store = new PostgresStore(pool, { schema: "hot_status" });
    await store.setup();
    const record = (id: string) => ({
      threadId: "res",
      checkpointNs: "",
      checkpointId: id,
      parentCheckpointId: undefined,
      checkpoint: { type: "json", data: new TextEncoder().encode("{}") },
      metadata: { type: "json", data: new TextEncoder().encode("{}") },
      metadataJson: {},
      channelVersions: {},
    });
    const put = (id: string, status: { state: "pending" | "done"; updatedAt: number; keepUpdatedAtFrom?: number; error?: string }) =>
      store.putCheckpoint({ record: record(id), blobs: [], chunks: [], status });
    const hotUpdates = async () => {
      await pool.query("SELECT pg_stat_force_next_flush()");
      await pool.query("SELECT 1");
      const rows = await pool.query(`SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE schemaname = 'hot_status' AND relname = 'resumable_threads'`);
      return rows.rows[0] as { upd: number; hot: number };
    };
    await put("cp-01", { state: "pending", updatedAt: 1000 });
    await store.patchThreadStatus({ threadId: "res", patch: { checkpointId: "cp-01", addAttempts: 1, attemptedAt: 1100, updatedAt: 1100 } });
    const before = await hotUpdates();
    for (let i = 2; i <= 9; i += 1) await put(`cp-0${i}`, { state: "pending", updatedAt: 1000 + i * 100, keepUpdatedAtFrom: 500, error: `e${i}` });
    const after = await hotUpdates();
    expect(await store.getThreadStatus("res")).toMatchObject({ state: "pending", checkpointId: "cp-09", updatedAt: 1100, error: "e9", attempts: 0 });
    expect(after.upd - before.upd).toBe(8);
    expect(after.hot - before.hot).toBe(8);
    expect((await store.listThreads({ states: ["pending"], limit: 10 })).map((t) => [t.threadId, t.updatedAt])).toEqual([["res", 1100]]);
    // Older than keepUpdatedAtFrom, or a state change: updatedAt moves.
    await put("cp-10", { state: "pending", updatedAt: 3000, keepUpdatedAtFrom: 2000 });
    expect((await store.getThreadStatus("res"))?.updatedAt).toBe(3000);
    await put("cp-11", { state: "done", updatedAt: 3200, keepUpdatedAtFrom: 0 });
    expect(await store.getThreadStatus("res")).toMatchObject({ state: "done", checkpointId: "cp-11", updatedAt: 3200 });
    // A late put changes nothing.
    await put("cp-10", { state: "done", updatedAt: 3300, keepUpdatedAtFrom: 0 });
    expect(await store.getThreadStatus("res")).toMatchObject({ checkpointId: "cp-11", updatedAt: 3200 });
    await store.close();
  });
});

describe("a fenced write racing a claim", () => {
  it("waits for a claim in progress on the lease row, then writes nothing and fails with LeaseLostError", async () => {
    const pool = db.pool({ max: 4 });
    const store = new PostgresStore(pool, { schema: "race_leases" });
    await store.setup();
    const saver = new ResumableSaver(store);
    const thread = threadId("race");
    const lease = await saver.claimLease(thread, { workerId: "stale", ttlMs: 60_000 });
    const fenced = saver.withLease(lease!);
    const first = { n: 1 };
    await fenced.put({ configurable: { thread_id: thread } }, checkpoint("cp-1", first), meta, versions(first, "cp-1"));
    // Another worker's claim, caught in the middle of its transaction: the lease row is updated, not committed.
    const claimer = await pool.connect();
    await claimer.query("BEGIN");
    await claimer.query(`UPDATE race_leases.resumable_leases SET token = token + 1, worker_id = 'new' WHERE thread_id = $1`, [thread]);
    const second = { n: 2 };
    let settled = false;
    const stalePut = fenced
      .put({ configurable: { thread_id: thread, checkpoint_id: "cp-1" } }, checkpoint("cp-2", second), meta, versions(second, "cp-2"))
      .finally(() => (settled = true));
    stalePut.catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The put reads the lease row FOR SHARE, so it waits for the claim instead of writing past it.
    expect(settled).toBe(false);
    await claimer.query("COMMIT");
    claimer.release();
    const error = await stalePut.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseLostError);
    expect((error as LeaseLostError).token).toBe(lease!.token);
    const latest = await saver.getTuple({ configurable: { thread_id: thread } });
    expect(latest?.checkpoint.id).toBe("cp-1");
    expect((await pool.query(`SELECT count(*)::int AS n FROM race_leases.resumable_blobs WHERE thread_id = $1`, [thread])).rows[0].n).toBe(1);
    expect((await saver.getThreadStatus(thread))?.checkpointId).toBe("cp-1");
    await store.close();
  });
});

describe("listThreads", () => {
  it("reads the status index, one range per state, never the whole table", async () => {
    const pool = db.pool();
    const store = new PostgresStore(pool, { schema: "plan_leases" });
    await store.setup();
    await pool.query(
      `INSERT INTO plan_leases.resumable_threads (thread_id, state, checkpoint_id, updated_at) ` +
        `SELECT 't' || i, CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 50 = 1 THEN 'pending' ELSE 'done' END, 'cp', 1000 + i FROM generate_series(1, 20000) AS i`,
    );
    await pool.query(`ANALYZE plan_leases.resumable_threads`);
    const query = { limit: 10, olderThan: 15_000, after: { updatedAt: 2000, threadId: "t1000" } };
    const page = await store.listThreads({ ...query, states: ["failed", "pending"] });
    expect(page.map((r) => r.threadId)).toEqual(["t1001", "t1050", "t1051", "t1100", "t1101", "t1150", "t1151", "t1200", "t1201", "t1250"]);
    const [sql, params] = store.listThreadsQuery(["failed", "pending"], query);
    const plan = (await pool.query(`EXPLAIN ${sql}`, params)).rows.map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"]).join("\n");
    expect(plan).not.toMatch(/Seq Scan/);
    expect(plan.match(/Index (Only )?Scan using resumable_threads_state/g), plan).toHaveLength(2);
    await store.close();
  });
});
