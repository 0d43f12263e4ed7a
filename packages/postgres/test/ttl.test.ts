// Whole-thread TTL on PostgreSQL (ttlSeconds). PostgreSQL has no row expiry, so one row per thread
// (resumable_thread_expiry) holds the thread's expiry, moved forward inside each write's own
// statement; reads treat an expired thread as gone at once, and deleteExpiredThreads() deletes it, a
// thread per statement. Time is moved by rewriting that row, so the tests need not wait.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type pg from "pg";

import { PostgresStore, type PostgresStoreOptions } from "../src/index.js";
import { TestDb, blob, cid, countingPool, record, threadId, write } from "./helpers.js";

const db = new TestDb();
let admin: pg.Pool;
beforeAll(async () => {
  await db.init();
  admin = db.pool();
});
afterAll(() => db.closeAll());

const TTL = 3600;
const TABLES = ["resumable_checkpoints", "resumable_blobs", "resumable_writes", "resumable_chunks", "resumable_threads", "resumable_thread_expiry"] as const;
let schemas = 0;

async function ttlStore(options: PostgresStoreOptions = {}, pool: pg.Pool = db.pool()): Promise<PostgresStore> {
  const store = new PostgresStore(pool, { schema: `ttl_${++schemas}`, ttlSeconds: TTL, ...options });
  await store.setup();
  return store;
}

/** Three checkpoints in two namespaces, with blobs, a chunk, a pending write each and a status. */
async function fill(store: PostgresStore, thread: string): Promise<void> {
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
const FULL = "3,3,3,3,1,1";
const NONE = "0,0,0,0,0,0";

/** Rows of the thread in each table, counted in one statement (one snapshot), and its expiry row. */
async function rows(store: PostgresStore, thread: string, pool: pg.Pool = admin): Promise<string> {
  // Chunks count once per chunk, whatever the number of parts (rows) it is stored in.
  const counts = TABLES.map(
    (t) => `(SELECT count(${t === "resumable_chunks" ? "DISTINCT (hash, idx)" : "*"}) FROM "${store.schema}".${t} WHERE thread_id = $1)::int AS ${t}`,
  );
  const { rows: [row] } = await pool.query<Record<string, number>>(`SELECT ${counts.join(", ")}`, [thread]);
  return TABLES.map((t) => row![t]).join(",");
}

async function expiry(store: PostgresStore, thread: string): Promise<number | undefined> {
  const { rows: found } = await admin.query<{ expires_at: string }>(`SELECT expires_at FROM "${store.schema}".resumable_thread_expiry WHERE thread_id = $1`, [thread]);
  return found[0] ? Number(found[0].expires_at) : undefined;
}

async function expire(store: PostgresStore, thread: string, at = Date.now() - 1000): Promise<void> {
  await admin.query(`UPDATE "${store.schema}".resumable_thread_expiry SET expires_at = $2 WHERE thread_id = $1`, [thread, at]);
}

async function listed(store: PostgresStore, query: Parameters<PostgresStore["listCheckpoints"]>[0], thread: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const stored of store.listCheckpoints(query)) if (stored.record.threadId === thread) ids.push(`${stored.record.checkpointNs}/${stored.record.checkpointId}`);
  return ids;
}

/** Everything a reader can see of a thread, through every read of the store. */
async function visible(store: PostgresStore, thread: string) {
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
  list: [`child/${cid(2)}`, `/${cid(1)}`, `/${cid(0)}`],
  listAll: [`child/${cid(2)}`, `/${cid(1)}`, `/${cid(0)}`],
  history: [cid(0)],
  blobs: 1,
  chunks: 1,
  status: cid(1),
  listed: true,
};
const GONE = { latest: undefined, byId: undefined, child: undefined, list: [], listAll: [], history: [], blobs: 0, chunks: 0, status: undefined, listed: false };

describe("whole-thread TTL on PostgreSQL", () => {
  it("every write moves the thread's expiry forward inside its own statement (still one round trip); a live thread is kept whole", async () => {
    const counter = countingPool(db.pool());
    const store = await ttlStore({}, counter.pool as pg.Pool);
    const thread = threadId("live");
    const before = Date.now();
    await fill(store, thread);
    expect(await expiry(store, thread)).toBeGreaterThanOrEqual(before + TTL * 1000 - 5000);
    expect(await visible(store, thread)).toEqual(WHOLE);
    await expire(store, thread, Date.now() + 10_000);
    counter.reset();
    await store.putCheckpoint({ record: record(thread, cid(3), { parentCheckpointId: cid(1) }), blobs: [], chunks: [] });
    expect(counter.count()).toBe(1);
    expect(await expiry(store, thread)).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    await expire(store, thread, Date.now() + 10_000);
    counter.reset();
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(3), writes: [write("t", 0, "a", 1)], chunks: [], mode: "upsert" });
    expect(counter.count()).toBe(1);
    expect(await expiry(store, thread)).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
    expect(await store.deleteExpiredThreads()).toBe(0);
    expect(await rows(store, thread)).toBe("4,3,4,3,1,1");
  });

  it("hides an expired thread from every read at once, before any sweep; other threads stay", async () => {
    const store = await ttlStore();
    const [gone, kept] = [threadId("gone"), threadId("kept")];
    await fill(store, gone);
    await fill(store, kept);
    expect(await visible(store, gone)).toEqual(WHOLE);
    await expire(store, gone);
    expect(await visible(store, gone)).toEqual(GONE);
    expect(await visible(store, kept)).toEqual(WHOLE);
    // Nothing was deleted yet: hiding is the reads' doing.
    expect(await rows(store, gone)).toBe(FULL);
    // An expired thread's status takes no patch either.
    expect(await store.patchThreadStatus({ threadId: gone, patch: { checkpointId: cid(1), state: "failed", updatedAt: 5 } })).toBeUndefined();
  });

  it("the sweep deletes expired threads whole (every table, every byte, lease kept) and only those, and counts them", async () => {
    const store = await ttlStore();
    const [e1, e2, e3, kept] = [threadId("e1"), threadId("e2"), threadId("e3"), threadId("kept")];
    for (const t of [e1, e2, e3, kept]) await fill(store, t);
    const lease = await store.claimLease({ threadId: e1, workerId: "w", ttlMs: 60_000 });
    for (const t of [e1, e2, e3]) await expire(store, t);
    const bytes = async (t: string) =>
      Number((await admin.query<{ n: string | null }>(`SELECT sum(length(data)) AS n FROM "${store.schema}".resumable_chunks WHERE thread_id = $1`, [t])).rows[0]!.n ?? 0);
    expect(await bytes(e1)).toBe(9000);
    expect(await store.deleteExpiredThreads({ limit: 2 })).toBe(2);
    expect(await store.deleteExpiredThreads({ limit: 2 })).toBe(1);
    expect(await store.deleteExpiredThreads()).toBe(0);
    for (const t of [e1, e2, e3]) {
      expect(await rows(store, t)).toBe(NONE);
      expect(await bytes(t)).toBe(0);
    }
    expect(await rows(store, kept)).toBe(FULL);
    expect(await visible(store, kept)).toEqual(WHOLE);
    // As deleteThread does, the lease row stays, so its token keeps growing.
    expect((await store.getLease(e1))?.token).toBe(lease!.token);
    expect((await store.claimLease({ threadId: e1, workerId: "w", ttlMs: 1 }))?.token).toBe(lease!.token + 1);
  });

  it("finds expired threads through the expiry index, never a scan of the threads", async () => {
    const store = await ttlStore();
    const client = await admin.connect();
    try {
      await client.query("SET enable_seqscan = off");
      const { rows: plan } = await client.query<{ "QUERY PLAN": string }>(
        `EXPLAIN SELECT thread_id FROM "${store.schema}".resumable_thread_expiry WHERE expires_at <= 1 ORDER BY expires_at LIMIT 100`,
      );
      expect(plan.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(/Index (Only )?Scan using resumable_thread_expiry_at/);
    } finally {
      client.release();
    }
  });

  it("a write to an expired thread deletes it first: the new run sees nothing of the old one", async () => {
    const store = await ttlStore();
    const thread = threadId("reborn");
    await fill(store, thread);
    await expire(store, thread);
    await store.putCheckpoint({ record: record(thread, cid(9), { channelVersions: { b: "1" } }), blobs: [blob("b", "1")], chunks: [] });
    expect(await listed(store, { threadId: thread }, thread)).toEqual([`/${cid(9)}`]);
    expect(await rows(store, thread)).toBe("1,1,0,0,0,1");
    expect(await expiry(store, thread)).toBeGreaterThan(Date.now());
    // A pending write to an expired thread too, and a fenced one.
    await expire(store, thread);
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(9), writes: [write("t", 0, "b", 2)], chunks: [], mode: "ignore" });
    expect(await rows(store, thread)).toBe("0,0,1,0,0,1");
    const lease = await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
    await expire(store, thread);
    await store.putCheckpoint({ record: record(thread, cid(10)), blobs: [], chunks: [], fence: { token: lease!.token, workerId: "w" } });
    expect(await rows(store, thread)).toBe("1,0,0,0,0,1");
  });

  it("refreshOnRead: getCheckpoint and listCheckpoints move a live thread's expiry forward; without it reads do not", async () => {
    for (const refreshOnRead of [false, true]) {
      const store = await ttlStore({ refreshOnRead });
      const thread = threadId("read");
      await fill(store, thread);
      const soon = Date.now() + 10_000;
      await expire(store, thread, soon);
      await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
      const afterGet = await expiry(store, thread);
      await expire(store, thread, soon);
      await listed(store, { threadId: thread }, thread);
      const afterList = await expiry(store, thread);
      if (refreshOnRead) {
        expect(afterGet).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
        expect(afterList).toBeGreaterThan(Date.now() + (TTL - 60) * 1000);
      } else {
        expect([afterGet, afterList]).toEqual([soon, soon]);
      }
      // A read never brings an expired thread back.
      await expire(store, thread);
      expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
      expect(await expiry(store, thread)).toBeLessThan(Date.now());
    }
  });

  it("a sweep whose connection dies mid-statement leaves the thread whole; the next sweep deletes it", async () => {
    // The sweep gets a pool of one connection whose backend pid is known.
    const sweepPool = db.pool({ max: 1 });
    const store = await ttlStore({}, sweepPool);
    const thread = threadId("killed");
    await fill(store, thread);
    await expire(store, thread);
    const pid = (await sweepPool.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    // Another transaction holds the thread's checkpoint rows, so the sweep's statement stops in the
    // middle: its expiry row and whatever it reached first are deleted, not committed.
    const holder = await admin.connect();
    await holder.query("BEGIN");
    await holder.query(`SELECT 1 FROM "${store.schema}".resumable_checkpoints WHERE thread_id = $1 FOR UPDATE`, [thread]);
    const sweep = store.deleteExpiredThreads().then(
      (n) => `swept ${n}`,
      (error: Error) => `failed: ${error.message}`,
    );
    for (let i = 0; ; i++) {
      const { rows: waiting } = await admin.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'", [pid]);
      if (waiting.length > 0) break;
      expect(i, "the sweep never waited on the held rows").toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // While it waits, another connection sees the thread whole; then the backend is killed.
    expect(await rows(store, thread)).toBe(FULL);
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
    expect(await sweep).toMatch(/^failed/);
    await holder.query("ROLLBACK");
    holder.release();
    expect(await rows(store, thread)).toBe(FULL);
    expect(await visible(store, thread)).toEqual(GONE);
    const next = await ttlStore({ schema: store.schema });
    expect(await next.deleteExpiredThreads()).toBe(1);
    expect(await rows(store, thread)).toBe(NONE);
  });

  it("readers on another connection see each thread whole or gone while sweeps run", async () => {
    const store = await ttlStore();
    const threads = Array.from({ length: 20 }, () => threadId("race"));
    for (const t of threads) await fill(store, t);
    for (const t of threads) await expire(store, t);
    const reader = db.pool({ max: 1 });
    await reader.query("SELECT 1"); // connected before the sweep starts
    const concurrent = new Set<string>();
    const between = new Set<string>();
    let sweeping = true;
    const sweeps = (async () => {
      let n = 0;
      // One thread per call, so that reads interleave with the sweep's statements; after each call the
      // sweeper itself looks at every thread too, so both states are seen whatever the scheduling.
      for (let got = 1; got > 0; ) {
        n += got = await store.deleteExpiredThreads({ limit: 1 });
        for (const t of threads) between.add(await rows(store, t));
      }
      sweeping = false;
      return n;
    })();
    while (sweeping) for (const t of [...threads].reverse()) concurrent.add(await rows(store, t, reader));
    expect(await sweeps).toBe(20);
    expect([...concurrent].filter((s) => s !== FULL && s !== NONE)).toEqual([]);
    expect(between).toEqual(new Set([FULL, NONE]));
  });

  it("keeps threads written before the TTL was turned on until their next write", async () => {
    const plain = new PostgresStore(db.pool(), { schema: `ttl_${++schemas}` });
    await plain.setup();
    const thread = threadId("old");
    await plain.putCheckpoint({ record: record(thread, cid(0)), blobs: [], chunks: [] });
    const store = new PostgresStore(db.pool(), { schema: plain.schema, ttlSeconds: TTL });
    expect(await expiry(store, thread)).toBeUndefined();
    expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    await store.putCheckpoint({ record: record(thread, cid(1), { parentCheckpointId: cid(0) }), blobs: [], chunks: [] });
    expect(await expiry(store, thread)).toBeGreaterThan(Date.now());
  });

  it("off by default: no statement names the expiry table, writes stay one round trip, no expiry rows", async () => {
    const counter = countingPool(db.pool());
    const store = new PostgresStore(counter.pool, { schema: `ttl_${++schemas}` });
    await store.setup();
    const thread = threadId("off");
    counter.reset();
    await fill(store, thread);
    await visible(store, thread);
    await store.deleteThread(thread);
    expect(counter.sql.filter((sql) => sql.includes("resumable_thread_expiry"))).toEqual([]);
    counter.reset();
    await store.putCheckpoint({ record: record(thread, cid(0)), blobs: [blob("a", "1")], chunks: [] });
    expect(counter.count()).toBe(1);
    expect(await rows(store, thread)).toBe("1,1,0,0,0,0");
    expect(await store.deleteExpiredThreads()).toBe(0);
  });

  it("refuses a ttlSeconds that is not a positive integer, and refreshOnRead without one", () => {
    for (const ttlSeconds of [0, -1, 1.5, Number.NaN, "60" as unknown as number]) {
      expect(() => new PostgresStore(admin, { ttlSeconds })).toThrow(/ttlSeconds/);
    }
    expect(() => new PostgresStore(admin, { refreshOnRead: true })).toThrow(/needs "ttlSeconds"/);
  });
});
