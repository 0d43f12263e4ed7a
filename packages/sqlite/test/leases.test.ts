// Leases and thread status on SQLite beyond the conformance categories: what each call costs in
// statements, that listing uses the status index (never a scan), and fencing between two connections
// to one file, as two processes have.
import { join } from "node:path";

import Database from "better-sqlite3";
import { LeaseLostError, ResumableSaver } from "@resumable/core";
import { afterAll, describe, expect, it } from "vitest";

import { SqliteStore } from "../src/index.js";
import { blob, cid, commands, freshStore, record, removeTempDirs, tempDir, write } from "./helpers.js";

afterAll(removeTempDirs);

describe("statements per call", () => {
  it("a put without a lease costs what it did; status adds one UPSERT; a fence adds one SELECT of the lease row", async () => {
    const { store } = await freshStore();
    const request = (id: number) => ({ record: record("cost", cid(id), { channelVersions: { a: String(id) } }), blobs: [blob("a", String(id))], chunks: [] });
    expect(await commands(store, () => store.putCheckpoint(request(1)))).toEqual(["BEGIN IMMEDIATE", "INSERT blob", "UPSERT checkpoint", "COMMIT"]);
    const withStatus = await commands(store, () => store.putCheckpoint({ ...request(2), status: { state: "pending", updatedAt: 1 } }));
    expect(withStatus).toEqual(["BEGIN IMMEDIATE", "INSERT blob", "UPSERT checkpoint", "UPSERT status", "COMMIT"]);
    const lease = await store.claimLease({ threadId: "cost", workerId: "w", ttlMs: 60_000 });
    const fenced = await commands(store, () =>
      store.putCheckpoint({ ...request(3), status: { state: "done", updatedAt: 2 }, fence: { token: lease!.token, workerId: "w" } }),
    );
    expect(fenced).toEqual(["BEGIN IMMEDIATE", "SELECT lease", "INSERT blob", "UPSERT checkpoint", "UPSERT status", "COMMIT"]);
    const writes = await commands(store, () =>
      store.putWrites({ threadId: "cost", checkpointNs: "", checkpointId: cid(3), writes: [write("t", 0, "a", 1)], chunks: [], mode: "ignore" }),
    );
    expect(writes).toEqual(["BEGIN IMMEDIATE", "INSERT write", "COMMIT"]);
    const special = await commands(store, () =>
      store.putWrites({
        threadId: "cost",
        checkpointNs: "",
        checkpointId: cid(3),
        writes: [write("t", -1, "__error__", { message: "x" })],
        chunks: [],
        mode: "upsert",
        status: { checkpointId: cid(3), state: "failed", error: "x", updatedAt: 3 },
      }),
    );
    expect(special).toEqual(["BEGIN IMMEDIATE", "UPSERT write", "UPDATE status", "COMMIT"]);
    expect((await store.getThreadStatus("cost"))?.state).toBe("failed");
    await store.close();
  });

  it("the saver sends status only for root checkpoints, and none at all with threadStatus: false", async () => {
    const { store } = await freshStore();
    const saver = new ResumableSaver(store);
    const off = new ResumableSaver(store, { threadStatus: false });
    const checkpoint = (id: string) => ({ v: 4, id, ts: new Date().toISOString(), channel_values: { a: 1 }, channel_versions: { a: "1" }, versions_seen: {} });
    const root = await commands(store, () => saver.put({ configurable: { thread_id: "saver" } }, checkpoint(cid(1)), { source: "loop", step: 0, parents: {} }, { a: "1" }));
    expect(root).toContain("UPSERT status");
    const child = await commands(store, () =>
      saver.put({ configurable: { thread_id: "saver", checkpoint_ns: "sub:1" } }, checkpoint(cid(2)), { source: "loop", step: 0, parents: {} }, { a: "1" }),
    );
    expect(child).not.toContain("UPSERT status");
    const none = await commands(store, () => off.put({ configurable: { thread_id: "off" } }, checkpoint(cid(3)), { source: "loop", step: 0, parents: {} }, { a: "1" }));
    expect(none).toEqual(["BEGIN IMMEDIATE", "INSERT blob", "UPSERT checkpoint", "COMMIT"]);
    expect(await store.getThreadStatus("off")).toBeUndefined();
    await store.close();
  });
});

describe("status within the resolution", () => {
  it("a put that keeps the state rewrites the row, not its index entry: updatedAt stays, the checkpoint, error, interrupts and attempts are replaced", async () => {
    const { store, path } = await freshStore();
    const put = (id: number, status: { state: "pending" | "done"; updatedAt: number; keepUpdatedAtFrom?: number; error?: string }) =>
      commands(store, () => store.putCheckpoint({ record: record("res", cid(id)), blobs: [], chunks: [], status }));
    await put(1, { state: "pending", updatedAt: 1000 });
    await store.patchThreadStatus({ threadId: "res", patch: { checkpointId: cid(1), addAttempts: 1, attemptedAt: 1100, updatedAt: 1100 } });
    // Same state, stored updatedAt (1100) at least keepUpdatedAtFrom: one UPDATE, no UPSERT.
    expect(await put(2, { state: "pending", updatedAt: 1500, keepUpdatedAtFrom: 500, error: "e" })).toEqual([
      "BEGIN IMMEDIATE",
      "UPSERT checkpoint",
      "UPDATE status",
      "COMMIT",
    ]);
    expect(await store.getThreadStatus("res")).toMatchObject({ state: "pending", checkpointId: cid(2), updatedAt: 1100, error: "e", attempts: 0 });
    expect((await store.getThreadStatus("res"))?.attemptedAt).toBeUndefined();
    // The index names the row where it was: listThreads still finds it, by its kept updatedAt.
    expect((await store.listThreads({ states: ["pending"], limit: 10 })).map((t) => [t.threadId, t.updatedAt])).toEqual([["res", 1100]]);
    // Older than keepUpdatedAtFrom: updatedAt moves.
    await put(3, { state: "pending", updatedAt: 3000, keepUpdatedAtFrom: 2000 });
    expect((await store.getThreadStatus("res"))?.updatedAt).toBe(3000);
    // A state change always moves it.
    await put(4, { state: "done", updatedAt: 3200, keepUpdatedAtFrom: 0 });
    expect(await store.getThreadStatus("res")).toMatchObject({ state: "done", checkpointId: cid(4), updatedAt: 3200 });
    // A late put (an older checkpoint id) changes nothing, on either path.
    await put(3, { state: "done", updatedAt: 3300, keepUpdatedAtFrom: 0 });
    expect(await store.getThreadStatus("res")).toMatchObject({ checkpointId: cid(4), updatedAt: 3200 });
    // The index agrees with the rows (no stale entry left by the row-only update).
    const db = new Database(path, { readonly: true });
    expect(db.prepare("PRAGMA integrity_check").get()).toEqual({ integrity_check: "ok" });
    db.close();
    await store.close();
  });

  it("through the saver: puts within statusResolutionMs keep updatedAt, a state change moves it, statusResolutionMs: 0 moves it every time", async () => {
    const { store } = await freshStore();
    const checkpoint = (id: string, values: Record<string, unknown>) => ({ v: 4, id, ts: new Date().toISOString(), channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, id])), versions_seen: {} });
    const meta = { source: "loop" as const, step: 0, parents: {} };
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    for (const [thread, saver] of [
      ["kept", new ResumableSaver(store)],
      ["exact", new ResumableSaver(store, { statusResolutionMs: 0 })],
    ] as const) {
      await saver.put({ configurable: { thread_id: thread } }, checkpoint(cid(1), { "branch:to:work": null }), meta, { a: cid(1) });
      const first = await store.getThreadStatus(thread);
      expect(first?.state).toBe("pending");
      await sleep(20);
      await saver.put({ configurable: { thread_id: thread } }, checkpoint(cid(2), { "branch:to:work": null }), meta, { a: cid(2) });
      const second = await store.getThreadStatus(thread);
      expect(second?.checkpointId).toBe(cid(2));
      if (thread === "kept") expect(second?.updatedAt).toBe(first?.updatedAt);
      else expect(second!.updatedAt).toBeGreaterThanOrEqual(first!.updatedAt + 20);
      await sleep(20);
      await saver.put({ configurable: { thread_id: thread } }, checkpoint(cid(3), { a: 1 }), meta, { a: cid(3) });
      const done = await store.getThreadStatus(thread);
      expect(done?.state).toBe("done");
      expect(done!.updatedAt).toBeGreaterThanOrEqual(first!.updatedAt + 40);
    }
    expect(() => new ResumableSaver(store, { statusResolutionMs: -1 })).toThrow(/statusResolutionMs/);
    await store.close();
  });
});

describe("listThreads", () => {
  it("reads one range of the status index per state: SQLite's plan searches the index once per state (in index order, so each range stops after limit rows) and never scans the table", async () => {
    const { store, path } = await freshStore();
    for (let i = 0; i < 200; i += 1) {
      await store.putCheckpoint({ record: record(`t${i}`, cid(i)), blobs: [], chunks: [], status: { state: i % 10 === 0 ? "failed" : "done", updatedAt: 1000 + i } });
    }
    const page = await store.listThreads({ states: ["failed", "pending"], olderThan: 1150, after: { updatedAt: 1010, threadId: "t10" }, limit: 5 });
    expect(page.map((r) => r.threadId)).toEqual(["t20", "t30", "t40", "t50", "t60"]);
    const db = new Database(path, { readonly: true });
    const plan = (sql: string, params: Record<string, unknown>) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(params) as Array<{ detail: string }>).map((r) => r.detail);
    // The statement listThreads runs, as the store builds it (two states, a cursor, olderThan).
    const range = (i: number) =>
      `SELECT * FROM (SELECT thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at FROM resumable_threads ` +
      `WHERE state = @s${i} AND updated_at >= @afterAt AND NOT (updated_at = @afterAt AND thread_id <= @afterThread) AND updated_at < @older ` +
      `ORDER BY updated_at, thread_id LIMIT @limit)`;
    const details = plan(`SELECT * FROM (${range(0)} UNION ALL ${range(1)}) ORDER BY updated_at, thread_id LIMIT @limit`, {
      s0: "failed",
      s1: "pending",
      afterAt: 1010,
      afterThread: "t10",
      older: 1150,
      limit: 5,
    });
    const searches = details.filter((d) => /SEARCH resumable_threads USING (COVERING )?INDEX resumable_threads_state \(state=\? AND updated_at>\? AND updated_at<\?\)/.test(d));
    expect(searches, details.join("\n")).toHaveLength(2);
    expect(details.filter((d) => /SCAN resumable_threads/.test(d)), details.join("\n")).toEqual([]);
    // Only the merge of the two ranges (at most 2 x limit rows) is sorted, never a state's range itself.
    const coroutines = details.join("\n").split(/CO-ROUTINE/).slice(1).map((part) => part.split(/\nSCAN \(subquery/)[0]!);
    for (const part of coroutines) expect(part, details.join("\n")).not.toMatch(/TEMP B-TREE/);
    db.close();
    await store.close();
  });
});

describe("two connections to one file (two processes)", () => {
  it("a claim on one connection fences the other's writes; only one of two racing claims wins", async () => {
    const path = join(tempDir(), "shared.db");
    const one = new SqliteStore(path);
    const two = new SqliteStore(path);
    await one.setup();
    await two.setup();
    const a = new ResumableSaver(one);
    const b = new ResumableSaver(two);
    const leaseA = await a.claimLease("shared", { workerId: "a", ttlMs: 50 });
    expect(leaseA).toBeDefined();
    const fencedA = a.withLease(leaseA!);
    const put = (saver: ResumableSaver, id: number, parent?: string) =>
      saver.put(
        { configurable: { thread_id: "shared", ...(parent ? { checkpoint_id: parent } : {}) } },
        { v: 4, id: cid(id), ts: new Date().toISOString(), channel_values: { n: id }, channel_versions: { n: `1${id}` }, versions_seen: {} },
        { source: "loop", step: id, parents: {} },
        { n: `1${id}` },
      );
    await put(fencedA, 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const leaseB = await b.claimLease("shared", { workerId: "b", ttlMs: 60_000 });
    expect(leaseB?.token).toBe(leaseA!.token + 1);
    await expect(put(fencedA, 2, cid(1))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(fencedA.putWrites({ configurable: { thread_id: "shared", checkpoint_id: cid(1) } }, [["n", 9]], "t")).rejects.toBeInstanceOf(LeaseLostError);
    expect((await b.getTuple({ configurable: { thread_id: "shared" } }))?.checkpoint.id).toBe(cid(1));
    expect((await b.getTuple({ configurable: { thread_id: "shared" } }))?.pendingWrites).toEqual([]);
    await put(b.withLease(leaseB!), 3, cid(1));
    expect((await a.getThreadStatus("shared"))?.checkpointId).toBe(cid(3));
    // Racing claims from both connections on a fresh thread: exactly one wins.
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).claimLease("race", { workerId: `w${i}`, ttlMs: 60_000 })));
    expect(results.filter(Boolean)).toHaveLength(1);
    await one.close();
    await two.close();
  });
});
