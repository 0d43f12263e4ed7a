// Whole-thread TTL on SQLite (ttlSeconds). SQLite has no expiry of its own, so one row per thread
// (resumable_thread_expiry) holds the thread's expiry, moved forward inside each write's transaction;
// reads treat an expired thread as gone at once, and deleteExpiredThreads() deletes it, a thread per
// transaction. Time is moved by rewriting that row, so the tests need not wait.
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

import { SqliteStore, type SqliteStoreOptions } from "../src/index.js";
import { blob, cid, commands, freshStore, record, removeTempDirs, write } from "./helpers.js";

afterAll(removeTempDirs);

const TTL = 3600;
const TABLES = ["resumable_checkpoints", "resumable_blobs", "resumable_writes", "resumable_chunks", "resumable_threads"] as const;

async function ttlStore(options: SqliteStoreOptions = {}) {
  return freshStore({ ttlSeconds: TTL, ...options });
}

/** Three checkpoints in two namespaces, with blobs, a chunk, a pending write and a status. */
async function fill(store: SqliteStore, thread: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const ns = i === 2 ? "child" : "";
    await store.putCheckpoint({
      record: record(thread, cid(i), { checkpointNs: ns, parentCheckpointId: i === 1 ? cid(0) : undefined, channelVersions: { a: String(i + 1) } }),
      blobs: [blob("a", String(i + 1))],
      chunks: [{ hash: `h${i}`, index: 0, data: new Uint8Array(3000).fill(i) }],
      ...(ns === "" ? { status: { state: "done" as const, updatedAt: 1000 + i } } : {}),
    });
    await store.putWrites({ threadId: thread, checkpointNs: ns, checkpointId: cid(i), writes: [write("task", 0, "a", i)], chunks: [], mode: "ignore" });
  }
}

/** Rows of the thread in each table (checkpoints, blobs, writes, chunk parts, status), and its expiry row. */
function rows(db: Database.Database, thread: string): number[] {
  // Chunks count once per chunk, whatever the number of parts (rows) it is stored in.
  return [...TABLES, "resumable_thread_expiry"].map(
    (t) => (db.prepare(`SELECT count(${t === "resumable_chunks" ? "DISTINCT hash || ':' || idx" : "*"}) AS n FROM ${t} WHERE thread_id = ?`).get(thread) as { n: number }).n,
  );
}

function expiry(db: Database.Database, thread: string): number | undefined {
  return (db.prepare("SELECT expires_at FROM resumable_thread_expiry WHERE thread_id = ?").get(thread) as { expires_at: number } | undefined)?.expires_at;
}

function expire(db: Database.Database, thread: string, at = Date.now() - 1000): void {
  db.prepare("UPDATE resumable_thread_expiry SET expires_at = ? WHERE thread_id = ?").run(at, thread);
}

async function listed(store: SqliteStore, query: Parameters<SqliteStore["listCheckpoints"]>[0], thread: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const stored of store.listCheckpoints(query)) if (stored.record.threadId === thread) ids.push(`${stored.record.checkpointNs}/${stored.record.checkpointId}`);
  return ids;
}

/** Everything a reader can see of a thread, through every read of the store. */
async function visible(store: SqliteStore, thread: string) {
  return {
    latest: (await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId,
    byId: (await store.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(1) }))?.record.checkpointId,
    child: (await store.getCheckpoint({ threadId: thread, checkpointNs: "child" }))?.record.checkpointId,
    list: await listed(store, { threadId: thread }, thread),
    listAll: await listed(store, {}, thread),
    history: (await store.getHistory({ threadId: thread, checkpointNs: "", checkpointId: cid(1), channels: ["a"] })).ancestors.map((a) => a.checkpointId),
    blobs: (await store.getBlobs({ threadId: thread, checkpointNs: "" }, [{ channel: "a", version: "1" }])).length,
    chunks: (await store.getChunks(thread, ["h0"])).length,
    status: (await store.getThreadStatus(thread))?.checkpointId,
    listed: (await store.listThreads({ limit: 1000 })).some((s) => s.threadId === thread),
  };
}

const WHOLE = {
  latest: cid(1),
  byId: cid(1),
  child: cid(2),
  list: [`/${cid(1)}`, `/${cid(0)}`, `child/${cid(2)}`],
  listAll: [`/${cid(1)}`, `/${cid(0)}`, `child/${cid(2)}`],
  history: [cid(0)],
  blobs: 1,
  chunks: 1,
  status: cid(1),
  listed: true,
};
const GONE = { latest: undefined, byId: undefined, child: undefined, list: [], listAll: [], history: [], blobs: 0, chunks: 0, status: undefined, listed: false };

describe("whole-thread TTL on SQLite", () => {
  it("every write moves the thread's expiry forward, in the write's own transaction; a live thread is kept whole", async () => {
    const { store, path } = await ttlStore();
    const db = new Database(path);
    const before = Date.now();
    await fill(store, "live");
    expect(expiry(db, "live")).toBeGreaterThanOrEqual(before + TTL * 1000);
    expect(await visible(store, "live")).toEqual(WHOLE);
    // A put and a putWrites each move it, with one statement inside their transaction.
    expire(db, "live", Date.now() + 10_000);
    const put = await commands(store, () => store.putCheckpoint({ record: record("live", cid(3), { parentCheckpointId: cid(1) }), blobs: [], chunks: [] }));
    expect(put).toEqual(["BEGIN IMMEDIATE", "UPSERT expiry", "UPSERT checkpoint", "COMMIT"]);
    expect(expiry(db, "live")).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    expire(db, "live", Date.now() + 10_000);
    const writes = await commands(store, () =>
      store.putWrites({ threadId: "live", checkpointNs: "", checkpointId: cid(3), writes: [write("t", 0, "a", 1)], chunks: [], mode: "upsert" }),
    );
    expect(writes).toEqual(["BEGIN IMMEDIATE", "UPSERT expiry", "UPSERT write", "COMMIT"]);
    expect(expiry(db, "live")).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    expect(await store.deleteExpiredThreads()).toBe(0);
    expect(rows(db, "live")).toEqual([4, 3, 4, 3, 1, 1]);
    db.close();
    await store.close();
  });

  it("hides an expired thread from every read at once, before any sweep; other threads stay", async () => {
    const { store, path } = await ttlStore();
    const db = new Database(path);
    await fill(store, "gone");
    await fill(store, "kept");
    expect(await visible(store, "gone")).toEqual(WHOLE);
    expire(db, "gone");
    expect(await visible(store, "gone")).toEqual(GONE);
    expect(await visible(store, "kept")).toEqual(WHOLE);
    // Nothing was deleted yet: hiding is the reads' doing.
    expect(rows(db, "gone")).toEqual([3, 3, 3, 3, 1, 1]);
    // An expired thread's status takes no patch either.
    expect(await store.patchThreadStatus({ threadId: "gone", patch: { checkpointId: cid(1), state: "failed", updatedAt: 5 } })).toBeUndefined();
    db.close();
    await store.close();
  });

  it("the sweep deletes expired threads whole (every table, lease kept) and only those, and counts them", async () => {
    const { store, path } = await ttlStore();
    const db = new Database(path);
    for (const t of ["e1", "e2", "e3", "kept"]) await fill(store, t);
    const lease = await store.claimLease({ threadId: "e1", workerId: "w", ttlMs: 60_000 });
    for (const t of ["e1", "e2", "e3"]) expire(db, t);
    const bytes = (t: string) =>
      (db.prepare("SELECT sum(length(data)) AS n FROM resumable_chunks WHERE thread_id = ?").get(t) as { n: number | null }).n ?? 0;
    expect(bytes("e1")).toBe(9000);
    expect(await store.deleteExpiredThreads({ limit: 2 })).toBe(2);
    expect(await store.deleteExpiredThreads({ limit: 2 })).toBe(1);
    expect(await store.deleteExpiredThreads()).toBe(0);
    for (const t of ["e1", "e2", "e3"]) {
      expect(rows(db, t)).toEqual([0, 0, 0, 0, 0, 0]);
      expect(bytes(t)).toBe(0);
    }
    expect(rows(db, "kept")).toEqual([3, 3, 3, 3, 1, 1]);
    expect(await visible(store, "kept")).toEqual(WHOLE);
    // As deleteThread does, the lease row stays, so its token keeps growing.
    expect((await store.getLease("e1"))?.token).toBe(lease!.token);
    expect((await store.claimLease({ threadId: "e1", workerId: "w", ttlMs: 1 }))?.token).toBe(lease!.token + 1);
    db.close();
    await store.close();
  });

  it("reads the expired rows through the expiry index, never a scan of the threads", async () => {
    const { store, path } = await ttlStore();
    const db = new Database(path);
    const plan = db.prepare("EXPLAIN QUERY PLAN SELECT thread_id FROM resumable_thread_expiry WHERE expires_at <= ? ORDER BY expires_at LIMIT ?").all(Date.now(), 100) as Array<{ detail: string }>;
    expect(plan.map((p) => p.detail).join("; ")).toMatch(/SEARCH resumable_thread_expiry USING (COVERING )?INDEX resumable_thread_expiry_at/);
    db.close();
    await store.close();
  });

  it("a write to an expired thread deletes it first, in the same transaction: the new run sees nothing of the old one", async () => {
    const { store, path } = await ttlStore();
    const db = new Database(path);
    await fill(store, "reborn");
    expire(db, "reborn");
    await store.putCheckpoint({ record: record("reborn", cid(9), { channelVersions: { b: "1" } }), blobs: [blob("b", "1")], chunks: [] });
    expect(await listed(store, { threadId: "reborn" }, "reborn")).toEqual([`/${cid(9)}`]);
    expect(rows(db, "reborn")).toEqual([1, 1, 0, 0, 0, 1]);
    expect(expiry(db, "reborn")).toBeGreaterThan(Date.now());
    // A pending write to an expired thread too.
    expire(db, "reborn");
    await store.putWrites({ threadId: "reborn", checkpointNs: "", checkpointId: cid(9), writes: [write("t", 0, "b", 2)], chunks: [], mode: "ignore" });
    expect(rows(db, "reborn")).toEqual([0, 0, 1, 0, 0, 1]);
    db.close();
    await store.close();
  });

  it("refreshOnRead: getCheckpoint and listCheckpoints move a live thread's expiry forward; without it reads do not", async () => {
    const plain = await ttlStore();
    const refreshing = await ttlStore({ refreshOnRead: true });
    for (const { store, path } of [plain, refreshing]) {
      const db = new Database(path);
      await fill(store, "read");
      const soon = Date.now() + 10_000;
      expire(db, "read", soon);
      await store.getCheckpoint({ threadId: "read", checkpointNs: "" });
      const afterGet = expiry(db, "read")!;
      expire(db, "read", soon);
      await listed(store, { threadId: "read" }, "read");
      const afterList = expiry(db, "read")!;
      if (store === refreshing.store) {
        expect(afterGet).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
        expect(afterList).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
      } else {
        expect([afterGet, afterList]).toEqual([soon, soon]);
      }
      // A read never brings an expired thread back.
      expire(db, "read");
      expect(await store.getCheckpoint({ threadId: "read", checkpointNs: "" })).toBeUndefined();
      expect(expiry(db, "read")).toBeLessThan(Date.now());
      db.close();
      await store.close();
    }
  });

  it("a sweep killed at any of its statements leaves the thread whole or gone, never in part", async () => {
    const { store: first, path } = await ttlStore();
    await first.close();
    const db = new Database(path);
    const outcomes = new Set<string>();
    for (let k = 1; ; k++) {
      const thread = `cut-${k}`;
      const store = new SqliteStore(path, { ttlSeconds: TTL });
      await fill(store, thread);
      expire(db, thread);
      let seen = 0;
      // The process dies right after the sweep's k-th statement: the listener throws, and the
      // connection is closed without a COMMIT, as a killed process's would be.
      store.instrument(() => {
        if (++seen === k) throw new Error("killed");
      });
      const result = await store.deleteExpiredThreads().then(
        (n) => `done ${n}`,
        (e: Error) => e.message,
      );
      await store.close();
      // Another connection sees the thread whole (every row) or gone (no row).
      const counts = rows(db, thread).join(",");
      const state = counts === "0,0,0,0,0,0" ? "gone" : counts === "3,3,3,3,1,1" ? "whole" : `in part: ${counts}`;
      expect(state, `killed after statement ${k}`).toMatch(/^(whole|gone)$/);
      outcomes.add(state);
      if (result.startsWith("done")) {
        expect(result).toBe("done 1");
        expect(state).toBe("gone");
        break;
      }
      // The next process's sweep finishes the job.
      const next = new SqliteStore(path, { ttlSeconds: TTL });
      expect(await next.deleteExpiredThreads()).toBe(state === "whole" ? 1 : 0);
      await next.close();
      expect(rows(db, thread)).toEqual([0, 0, 0, 0, 0, 0]);
      expect(k).toBeLessThan(50);
    }
    // The kill points covered both sides of the commit.
    expect(outcomes).toEqual(new Set(["whole", "gone"]));
    db.close();
  });

  it("keeps threads written before the TTL was turned on until their next write", async () => {
    const { store: plain, path } = await freshStore();
    await plain.putCheckpoint({ record: record("old", cid(0)), blobs: [], chunks: [] });
    await plain.close();
    const store = new SqliteStore(path, { ttlSeconds: TTL });
    const db = new Database(path);
    expect(expiry(db, "old")).toBeUndefined();
    expect((await store.getCheckpoint({ threadId: "old", checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    await store.putCheckpoint({ record: record("old", cid(1), { parentCheckpointId: cid(0) }), blobs: [], chunks: [] });
    expect(expiry(db, "old")).toBeGreaterThan(Date.now());
    db.close();
    await store.close();
  });

  it("off by default: no expiry rows, and every call sends the statements it sent before", async () => {
    const { store, path } = await freshStore();
    const db = new Database(path);
    const put = await commands(store, () => store.putCheckpoint({ record: record("t", cid(0)), blobs: [blob("a", "1")], chunks: [] }));
    expect(put).toEqual(["BEGIN IMMEDIATE", "INSERT blob", "UPSERT checkpoint", "COMMIT"]);
    const writes = await commands(store, () =>
      store.putWrites({ threadId: "t", checkpointNs: "", checkpointId: cid(0), writes: [write("t", 0, "a", 1)], chunks: [], mode: "ignore" }),
    );
    expect(writes).toEqual(["BEGIN IMMEDIATE", "INSERT write", "COMMIT"]);
    const read = await commands(store, () => store.getCheckpoint({ threadId: "t", checkpointNs: "" }));
    expect(read).toEqual(["SELECT checkpoint"]);
    expect(await commands(store, () => store.deleteThread("t"))).not.toContain("DELETE expiry");
    expect((db.prepare("SELECT count(*) AS n FROM resumable_thread_expiry").get() as { n: number }).n).toBe(0);
    expect(await store.deleteExpiredThreads()).toBe(0);
    db.close();
    await store.close();
  });

  it("refuses a ttlSeconds that is not a positive integer, and refreshOnRead without one", () => {
    for (const ttlSeconds of [0, -1, 1.5, Number.NaN, "60" as unknown as number]) {
      expect(() => new SqliteStore(":memory:", { ttlSeconds })).toThrow(/ttlSeconds/);
    }
    expect(() => new SqliteStore(":memory:", { refreshOnRead: true })).toThrow(/needs "ttlSeconds"/);
  });
});
