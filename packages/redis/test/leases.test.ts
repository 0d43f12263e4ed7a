// Leases and thread status on Redis beyond the conformance categories: round trips per call, what a
// refused write leaves behind, the status index on a Cluster (entries that lag the records), TTL, and
// deleteThread keeping the lease.
import { LeaseLostError, type ThreadStatusRecord } from "@resumable/core";
import { records } from "@resumable/conformance";
import type { Cluster } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";

import { RedisStore } from "../src/index.js";
import { TestClients, prefix, recordingClient, threadId } from "./helpers.js";

const { record, blob, cid, write } = records;
const clients = new TestClients();
afterAll(() => clients.closeAll());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const put = (thread: string, id: number, status?: { state: "pending" | "done"; updatedAt: number }) => ({
  record: record(thread, cid(id), { channelVersions: { a: String(id) } }),
  blobs: [blob("a", String(id))],
  chunks: [{ hash: `h${id}`, index: 0, data: new Uint8Array([id]) }],
  ...(status ? { status } : {}),
});

/** Every thread a listing returns, paging with `limit` through the store's keyset cursor. */
async function listAll(store: RedisStore, states: ThreadStatusRecord["state"][], limit: number): Promise<string[]> {
  const out: string[] = [];
  let after: { updatedAt: number; threadId: string } | undefined;
  for (;;) {
    const page = await store.listThreads({ states, limit, ...(after ? { after } : {}) });
    out.push(...page.map((r) => r.threadId));
    if (page.length < limit) return out;
    const last = page[page.length - 1]!;
    after = { updatedAt: last.updatedAt, threadId: last.threadId };
  }
}

describe("round trips (standalone): one script or command per call", () => {
  it("claim, renew, release, getLease, getThreadStatus, patch, listThreads and a fenced put or putWrites are one call each", async () => {
    const counter = recordingClient(await clients.standalone());
    const store = new RedisStore(counter.client, { keyPrefix: prefix("leases-rt") });
    await store.setup();
    const thread = threadId("rt");
    const count = async (body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      return [...counter.commands];
    };
    const lease = await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
    expect(lease?.token).toBe(1);
    const fence = { token: lease!.token, workerId: "w" };
    expect(await count(() => store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))).toEqual(["EVALSHA"]);
    const current = (await store.getLease(thread))!;
    expect(await count(() => store.renewLease(current, 60_000))).toEqual(["EVALSHA"]);
    const fenced = { token: current.token, workerId: "w" };
    await store.putCheckpoint({ ...put(thread, 1, { state: "pending", updatedAt: 1000 }), fence: fenced });
    expect(await count(() => store.putCheckpoint({ ...put(thread, 2, { state: "pending", updatedAt: 1001 }), fence: fenced }))).toEqual(["EVALSHA"]);
    const failing = { checkpointId: cid(2), state: "failed" as const, error: "boom", updatedAt: 1002 };
    const writes = { threadId: thread, checkpointNs: "", checkpointId: cid(2), writes: [write("t", -1, "__error__", { message: "boom" })], chunks: [], mode: "upsert" as const };
    expect(await count(() => store.putWrites({ ...writes, fence: fenced, status: failing }))).toEqual(["EVALSHA"]);
    expect(await count(() => store.patchThreadStatus({ threadId: thread, patch: { checkpointId: cid(2), addAttempts: 1, attemptedAt: 7, updatedAt: 1003 }, fence: fenced }))).toEqual(["EVALSHA"]);
    expect(await count(() => store.getThreadStatus(thread))).toEqual(["HGETALL"]);
    expect(await count(() => store.getLease(thread))).toEqual(["HMGET"]);
    expect(await count(() => store.listThreads({ states: ["failed", "pending", "dead"], limit: 10 }))).toEqual(["EVALSHA"]);
    expect(await count(() => store.releaseLease(current))).toEqual(["EVALSHA"]);
    expect(await store.getThreadStatus(thread)).toEqual({ threadId: thread, state: "failed", checkpointId: cid(2), updatedAt: 1003, error: "boom", attempts: 1, attemptedAt: 7 });
    // Without a lease or a status, a put is the script it was before.
    expect(await count(() => store.putCheckpoint(put(thread, 3)))).toEqual(["EVALSHA"]);
    expect(fence.token).toBeLessThan(current.token);
  });
});

describe("a refused write (standalone)", () => {
  it("writes nothing: no record, blob, chunk, write, status or index entry, also on a thread's first put", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("leases-refused");
    const a = new RedisStore(client, { keyPrefix });
    const b = new RedisStore(client, { keyPrefix });
    await a.setup();
    const thread = threadId("refused");
    const leaseA = (await a.claimLease({ threadId: thread, workerId: "a", ttlMs: 50 }))!;
    await sleep(120);
    const leaseB = (await b.claimLease({ threadId: thread, workerId: "b", ttlMs: 60_000 }))!;
    expect(leaseB.token).toBe(leaseA.token + 1);
    const stale = { token: leaseA.token, workerId: "a" };
    // The thread has never been written: the put would also have added it to the thread index.
    const refused = await a.putCheckpoint({ ...put(thread, 1, { state: "done", updatedAt: Date.now() }), fence: stale }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(refused).toMatchObject({ token: leaseA.token, currentToken: leaseB.token, holder: "b" });
    const writes = await a
      .putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [write("t", 0, "a", 1)], chunks: [{ hash: "hw", index: 0, data: new Uint8Array([1]) }], mode: "ignore", fence: stale })
      .catch((e: unknown) => e);
    expect(writes).toBeInstanceOf(LeaseLostError);
    expect(await b.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
    expect(await b.getChunks(thread, ["h1", "hw"])).toEqual([]);
    expect(await b.getThreadStatus(thread)).toBeUndefined();
    expect((await b.listThreads({ limit: 1000 })).some((r) => r.threadId === thread)).toBe(false);
    const threadIndex = (await client.zrange(`${keyPrefix}threads`, 0, -1)).filter((m) => m.startsWith(`${thread}\u0000`));
    expect(threadIndex).toEqual([]);
    // Only the lease hash exists for the thread.
    const [, keys] = await client.scan("0", "MATCH", `${keyPrefix}{${thread}}*`, "COUNT", 100_000);
    expect(keys).toEqual([`${keyPrefix}{${thread}}:l`]);
  });
});

describe("deleteThread and TTL (standalone)", () => {
  it("deleteThread removes the status and its index entry but keeps the lease, so tokens keep growing", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("leases-delete");
    const store = new RedisStore(client, { keyPrefix });
    const thread = threadId("delete");
    const lease = (await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))!;
    await store.putCheckpoint({ ...put(thread, 1, { state: "pending", updatedAt: 5 }), fence: lease });
    expect(await client.zscore(`${keyPrefix}{${keyPrefix}:status}:pending`, `${thread}\u00005`)).toBe("5");
    await store.deleteThread(thread);
    expect(await client.zscore(`${keyPrefix}{${keyPrefix}:status}:pending`, `${thread}\u00005`)).toBeNull();
    expect(await store.getThreadStatus(thread)).toBeUndefined();
    expect(await store.getLease(thread)).toMatchObject({ token: lease.token, workerId: "w", released: false });
    expect((await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))?.token).toBe(lease.token + 1);
  });

  it("the status expires with the thread; the lease does not; an expired thread leaves the listing and its index entry goes", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("leases-ttl");
    const store = new RedisStore(client, { keyPrefix, ttlSeconds: 1 });
    const thread = threadId("ttl");
    await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
    await store.putCheckpoint(put(thread, 1, { state: "pending", updatedAt: 42 }));
    const base = `${keyPrefix}{${thread}}`;
    const ttl = await client.pttl(`${base}:s`);
    expect(ttl).toBeGreaterThan(0);
    expect(Math.abs(ttl - (await client.pttl(`${base}:m`)))).toBeLessThan(50);
    expect(await client.pttl(`${base}:l`)).toBe(-1);
    expect((await store.listThreads({ states: ["pending"], limit: 1000 })).map((r) => r.threadId)).toContain(thread);
    await sleep(1300);
    expect(await store.getThreadStatus(thread)).toBeUndefined();
    expect((await store.listThreads({ states: ["pending"], limit: 1000 })).map((r) => r.threadId)).not.toContain(thread);
    expect(await client.zscore(`${keyPrefix}{${keyPrefix}:status}:pending`, `${thread}\u000042`)).toBeNull();
    expect(await store.getLease(thread)).toBeDefined();
  });
});

describe("listing with stale index entries", () => {
  it("never loses a thread whose current entry ties (same time, same thread) with a stale entry of another state across a page boundary", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("leases-ties");
    const store = new RedisStore(client, { keyPrefix });
    const threads: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const thread = `tie-${String(i).padStart(2, "0")}-${threadId()}`;
      threads.push(thread);
      await store.putCheckpoint(put(thread, 1, { state: "pending", updatedAt: 100 + i }));
      await store.patchThreadStatus({ threadId: thread, patch: { checkpointId: cid(1), state: "dead", updatedAt: 100 + i } });
      // What a Cluster's status change leaves when its process dies between the script and the index move.
      await client.zadd(`${keyPrefix}{${keyPrefix}:status}:pending`, 100 + i, `${thread}\u0000${100 + i}`);
    }
    for (const limit of [1, 2, 3, 7]) expect(await listAll(store, ["pending", "dead"], limit)).toEqual(threads);
    expect(await listAll(store, ["pending"], 5)).toEqual([]);
  });
});

describe("thread ids as data", () => {
  for (const where of ["standalone", "cluster"] as const) {
    it(`${where}: ids with key syntax, globs, braces and unicode are listed, read back and ordered by their bytes at equal times`, async () => {
      const client = where === "standalone" ? await clients.standalone() : await clients.cluster();
      const store = new RedisStore(client, { keyPrefix: prefix(`leases-ids-${where}`) });
      const run = threadId("ids");
      const ids = ["a:b", "a", "{x}", "%41", "*?[]\\", "ü", "🚀", "z y", "a\u0001"].map((id) => `${run}/${id}`);
      for (const id of ids) {
        await store.putCheckpoint(put(id, 1, { state: "pending", updatedAt: 500 }));
        await store.putWrites({
          threadId: id,
          checkpointNs: "",
          checkpointId: cid(1),
          writes: [write("t", -3, "__interrupt__", [{ value: [] }])],
          chunks: [],
          mode: "upsert",
          status: { checkpointId: cid(1), state: "interrupted", interrupts: { [id]: [{ value: { list: [], big: 12345678901234567 } }] }, updatedAt: 600 },
        });
      }
      const expected = [...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      expect((await store.listThreads({ states: ["interrupted"], limit: 100 })).map((r) => r.threadId)).toEqual(expected);
      expect(await listAll(store, ["interrupted", "pending"], 2)).toEqual(expected);
      const status = await store.getThreadStatus(ids[4]!);
      // Interrupt values come back as the JSON the saver gave: [] stays [], big numbers keep their digits.
      expect(status?.interrupts).toEqual({ [ids[4]!]: [{ value: { list: [], big: 12345678901234567 } }] });
    });
  }
});

describe("the status index on a Cluster", () => {
  it("lives in one slot; a put with a status is three calls (index entry first, the script, then the old entry goes)", async () => {
    const cluster = await clients.cluster();
    const counter = recordingClient(cluster);
    const keyPrefix = prefix("leases-cluster");
    const store = new RedisStore(counter.client, { keyPrefix });
    await store.setup();
    const slots = new Set<number>();
    for (const state of ["pending", "done", "failed", "interrupted", "dead"]) slots.add(Number(await cluster.call("CLUSTER", "KEYSLOT", `${keyPrefix}{${keyPrefix}:status}:${state}`)));
    expect(slots.size).toBe(1);
    const thread = threadId("cluster");
    await store.putCheckpoint(put(thread, 1, { state: "pending", updatedAt: 10 }));
    counter.reset();
    await store.putCheckpoint(put(thread, 2, { state: "done", updatedAt: 11 }));
    expect(counter.commands).toEqual(["EVALSHA", "EVALSHA", "EVALSHA"]);
    const index = `${keyPrefix}{${keyPrefix}:status}`;
    expect(await cluster.zscore(`${index}:pending`, `${thread}\u000010`)).toBeNull();
    expect(await cluster.zscore(`${index}:done`, `${thread}\u000011`)).toBe("11");
    // A patch that keeps the state: its entry is added to every state first, and only the right one stays.
    await store.patchThreadStatus({ threadId: thread, patch: { checkpointId: cid(2), addAttempts: 1, updatedAt: 12 } });
    for (const state of ["pending", "failed", "interrupted", "dead"]) expect(await cluster.zscore(`${index}:${state}`, `${thread}\u000012`)).toBeNull();
    expect(await cluster.zscore(`${index}:done`, `${thread}\u000012`)).toBe("12");
    expect(await cluster.zscore(`${index}:done`, `${thread}\u000011`)).toBeNull();
    // A patch naming another checkpoint changes nothing, and leaves no entry behind.
    expect(await store.patchThreadStatus({ threadId: thread, patch: { checkpointId: cid(1), state: "dead", updatedAt: 13 } })).toBeUndefined();
    expect(await cluster.zscore(`${index}:dead`, `${thread}\u000013`)).toBeNull();
    await store.deleteThread(thread);
    expect(await cluster.zscore(`${index}:done`, `${thread}\u000012`)).toBeNull();
  });

  it("skips entries a crash left behind (before or after the script) and pruneThreadIndex removes them", async () => {
    const cluster: Cluster = await clients.cluster();
    const keyPrefix = prefix("leases-cluster-crash");
    const store = new RedisStore(cluster, { keyPrefix });
    const index = `${keyPrefix}{${keyPrefix}:status}`;
    const done = threadId("done");
    await store.putCheckpoint(put(done, 1, { state: "done", updatedAt: 20 }));
    // Crash after the index entry went in, before the script: a thread without a status.
    const ghost = threadId("ghost");
    await cluster.zadd(`${index}:pending`, 21, `${ghost}\u000021`);
    // Crash after the script, before the old entry went: the thread is done, its pending entry stays.
    await cluster.zadd(`${index}:pending`, 19, `${done}\u000019`);
    expect((await store.listThreads({ limit: 100 })).map((r) => [r.threadId, r.state])).toEqual([[done, "done"]]);
    expect(await store.listThreads({ states: ["pending"], limit: 100 })).toEqual([]);
    expect(await store.pruneThreadIndex({ graceMs: 0 })).toBe(2);
    expect(await cluster.zcard(`${index}:pending`)).toBe(0);
    expect(await cluster.zcard(`${index}:done`)).toBe(1);
  });

  it("fences writes across nodes' clients: a refused put leaves no index entry", async () => {
    const cluster = await clients.cluster();
    const keyPrefix = prefix("leases-cluster-fence");
    const a = new RedisStore(cluster, { keyPrefix });
    const b = new RedisStore(await clients.cluster(), { keyPrefix });
    const thread = threadId("fence");
    const leaseA = (await a.claimLease({ threadId: thread, workerId: "a", ttlMs: 50 }))!;
    await a.putCheckpoint({ ...put(thread, 1, { state: "pending", updatedAt: 30 }), fence: leaseA });
    await sleep(120);
    const leaseB = (await b.claimLease({ threadId: thread, workerId: "b", ttlMs: 60_000 }))!;
    await expect(a.putCheckpoint({ ...put(thread, 2, { state: "done", updatedAt: 31 }), fence: leaseA })).rejects.toBeInstanceOf(LeaseLostError);
    const index = `${keyPrefix}{${keyPrefix}:status}`;
    expect(await cluster.zscore(`${index}:done`, `${thread}\u000031`)).toBeNull();
    expect(await cluster.zscore(`${index}:pending`, `${thread}\u000030`)).toBe("30");
    expect((await b.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
    await b.putCheckpoint({ ...put(thread, 2, { state: "done", updatedAt: 32 }), fence: leaseB });
    expect((await b.listThreads({ states: ["done"], limit: 10 })).map((r) => r.checkpointId)).toEqual([cid(2)]);
  });
});
