import { InvalidConfigError, StoreClosedError, StoreNotSetUpError } from "@resumable/core";
import { records } from "@resumable/conformance";
import { freePort, startRedis, type DisposableRedisServer } from "@resumable/test-servers";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { RedisSaver, RedisStore, RedisUnavailableError } from "../src/index.js";
import { TestClients, prefix, threadId } from "./helpers.js";

const { record, blob, json, cid, write, decode } = records;
const clients = new TestClients();
// A server of this file's own for the tests that change its configuration.
let own: DisposableRedisServer;
let ownClient: Redis;
beforeAll(async () => {
  own = await startRedis();
  ownClient = new Redis(own.url);
});
afterAll(async () => {
  await clients.closeAll();
  await ownClient?.quit();
  await own?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every key of a thread, found with SCAN (fine in a test; the store never needs it). */
async function threadKeys(client: Redis, keyPrefix: string, thread: string): Promise<string[]> {
  const [, keys] = await client.scan("0", "MATCH", `${keyPrefix}{${thread}}*`, "COUNT", 100_000);
  return keys.sort();
}

describe("RedisStore options and errors", () => {
  it("refuses a key prefix with a hash-tag brace, and bad numbers, naming the option", () => {
    const client = ownClient;
    expect(() => new RedisStore(client, { keyPrefix: "app{1}:" })).toThrow(InvalidConfigError);
    expect(() => new RedisStore(client, { keyPrefix: "app{1}:" })).toThrow(/keyPrefix/);
    expect(() => new RedisStore(client, { ttlSeconds: 0 })).toThrow(/ttlSeconds/);
    expect(() => new RedisStore(client, { chunkBytes: -1 })).toThrow(/chunkBytes/);
    expect(() => RedisStore.connect("http://localhost")).toThrow(/redis:\/\//);
  });

  it("fails with RedisUnavailableError naming the operation when no server answers", async () => {
    const port = await freePort();
    const store = RedisStore.connect(`redis://127.0.0.1:${port}`);
    const error = await store.setup().then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(/Redis was unreachable during setup .*retrying it is safe/);
    await store.close();
    await expect(store.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreClosedError);
  });

  it("refuses an eviction policy that could tear a thread apart, unless told otherwise", async () => {
    try {
      await ownClient.config("SET", "maxmemory-policy", "allkeys-lru");
      await expect(new RedisStore(ownClient).setup()).rejects.toThrow(/maxmemory-policy is allkeys-lru/);
      await new RedisStore(ownClient, { checkEvictionPolicy: false }).setup();
      await ownClient.config("SET", "maxmemory-policy", "volatile-lru");
      // Without a TTL no key of ours can be evicted under volatile-*; with one, any could.
      await new RedisStore(ownClient).setup();
      await expect(new RedisStore(ownClient, { ttlSeconds: 60 }).setup()).rejects.toBeInstanceOf(InvalidConfigError);
    } finally {
      await ownClient.config("SET", "maxmemory-policy", "noeviction");
    }
  });

  it("refuses keys written by a newer layout", async () => {
    const keyPrefix = prefix("layout");
    await ownClient.set(`${keyPrefix}layout`, "99");
    await expect(new RedisStore(ownClient, { keyPrefix }).setup()).rejects.toBeInstanceOf(StoreNotSetUpError);
  });

  it("runs its scripts again after the server lost them (SCRIPT FLUSH, a restart)", async () => {
    const store = new RedisStore(ownClient, { keyPrefix: prefix("flush") });
    await store.setup();
    await ownClient.script("FLUSH");
    const thread = threadId();
    await store.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: [] });
    expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
  });
});

describe("the thread index", () => {
  it("pages list() across more threads than a page holds, each thread once", async () => {
    const store = new RedisStore(await clients.standalone(), { keyPrefix: prefix("index") });
    const threads = Array.from({ length: 230 }, (_, i) => `thread-${String(i).padStart(3, "0")}`);
    for (const t of threads) {
      await store.putCheckpoint({ record: record(t, cid(1)), blobs: [], chunks: [] });
      await store.putCheckpoint({ record: record(t, cid(2), { parentCheckpointId: cid(1) }), blobs: [], chunks: [] });
    }
    const seen: string[] = [];
    for await (const item of store.listCheckpoints({})) seen.push(`${item.record.threadId}/${item.record.checkpointId}`);
    expect(seen).toEqual(threads.flatMap((t) => [`${t}/${cid(2)}`, `${t}/${cid(1)}`]));
    const limited = [];
    for await (const item of store.listCheckpoints({ limit: 3, filter: { source: "loop" } })) limited.push(item.record.threadId);
    expect(limited).toEqual(["thread-000", "thread-000", "thread-001"]);
  });

  it("keeps one entry per thread when two processes put its first checkpoint at once, and prune removes stale ones", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("race");
    const [a, b] = [new RedisStore(client, { keyPrefix }), new RedisStore(client, { keyPrefix })];
    const thread = threadId("race");
    await Promise.all([
      a.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: [] }),
      b.putCheckpoint({ record: record(thread, cid(2)), blobs: [], chunks: [] }),
    ]);
    const entries = async () => (await client.zrangebylex(`${keyPrefix}threads`, "-", "+")).map((m) => m.split("\u0000")[0]);
    expect(await entries()).toEqual([thread]);
    // An entry whose thread never got a checkpoint (a crash between indexing and the first put).
    await client.zadd(`${keyPrefix}threads`, 0, `ghost\u0000${(Date.now() - 3_600_000).toString(36)}.00`);
    const listed = [];
    for await (const item of a.listCheckpoints({})) listed.push(item.record.threadId);
    expect(listed).toEqual([thread, thread]);
    expect(await a.pruneThreadIndex()).toBe(1);
    expect(await entries()).toEqual([thread]);
    await a.deleteThread(thread);
    expect(await entries()).toEqual([]);
  });
});

describe("TTL of a whole thread", () => {
  it("gives every key of the thread the same expiry, refreshes it on write, and expires the thread whole", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("ttl");
    const store = new RedisStore(client, { keyPrefix, ttlSeconds: 2 });
    const thread = threadId("ttl");
    await store.putCheckpoint({ record: record(thread, cid(1), { channelVersions: { a: "1" } }), blobs: [blob("a", "1")], chunks: [{ hash: "h", index: 0, data: new Uint8Array([7]) }] });
    await store.putWrites({ threadId: thread, checkpointNs: "child:1", checkpointId: cid(1), writes: [write("t", 0, "a", 1)], chunks: [], mode: "ignore" });
    const keys = await threadKeys(client, keyPrefix, thread);
    expect(keys.length).toBe(6);
    const expiry = async () => new Set(await Promise.all(keys.map(async (k) => Number(await client.call("PEXPIRETIME", k)))));
    const first = await expiry();
    expect(first.size).toBe(1);
    expect([...first][0]).toBeGreaterThan(0);
    await sleep(1200);
    // A write in one namespace moves the expiry of every key, those of the other namespace too.
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [write("t", 0, "a", 2)], chunks: [], mode: "ignore" });
    const refreshed = await expiry();
    expect(refreshed.size).toBe(1);
    expect([...refreshed][0]! - [...first][0]!).toBeGreaterThanOrEqual(1000);
    // A saver without a TTL keeps the thread's expiry, and gives it to the keys it adds.
    const plain = new RedisStore(client, { keyPrefix });
    await plain.putCheckpoint({ record: record(thread, cid(2), { checkpointNs: "child:2" }), blobs: [], chunks: [] });
    const all = await threadKeys(client, keyPrefix, thread);
    expect(all.length).toBe(8);
    const withNew = new Set(await Promise.all(all.map(async (k) => Number(await client.call("PEXPIRETIME", k)))));
    expect(withNew.size).toBe(1);
    await sleep(2300);
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
    expect(await threadKeys(client, keyPrefix, thread)).toEqual([]);
    // The index entry is left behind by expiry; prune removes it.
    expect(await store.pruneThreadIndex({ graceMs: 0 })).toBe(1);
  });

  it("works through the saver", async () => {
    const saver = new RedisSaver(await clients.standalone(), { keyPrefix: prefix("ttl-saver"), ttlSeconds: 60 });
    const config = await saver.put({ configurable: { thread_id: "t" } }, { v: 4, id: "1", ts: "", channel_values: { a: 1 }, channel_versions: { a: 1 }, versions_seen: {} }, { source: "input", step: -1, parents: {} }, { a: 1 });
    expect(decode(json(1))).toBe(1);
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ a: 1 });
  });
});
