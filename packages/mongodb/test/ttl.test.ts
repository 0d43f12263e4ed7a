// Threads expire as a whole. MongoDB's TTL monitor deletes document by document, in no order, so it
// would leave a thread in part (a checkpoint without its blobs, a child without its parent): the store
// does not use it. One document per thread holds its expiry; reads treat an expired thread as gone at
// once, and deleteExpiredThreads() deletes it checkpoints first. Time is moved by rewriting that
// document, so the tests need not wait.
import { StoreBusyError } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { MongoDBStore } from "../src/index.js";
import { HANDLERS, TestServer, blob, cid, record, threadId, write } from "./helpers.js";

describe.each(HANDLERS)("whole-thread TTL on FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  let store: MongoDBStore;
  beforeAll(async () => {
    await server.init();
    store = new MongoDBStore(server.client, { dbName: await server.database("ttl"), ttlSeconds: 3600 });
    await store.setup();
  });
  afterAll(() => server.closeAll());

  async function fill(thread: string): Promise<void> {
    for (let i = 0; i < 3; i++) {
      await store.putCheckpoint({
        record: record(thread, cid(i), { parentCheckpointId: i === 0 ? undefined : cid(i - 1), channelVersions: { a: String(i + 1) } }),
        blobs: [blob("a", String(i + 1))],
        chunks: [{ hash: `h${i}`, index: 0, data: new Uint8Array([i]) }],
      });
      await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(i), writes: [write("task", 0, "a", i)], chunks: [], mode: "ignore" });
    }
  }

  const expire = (thread: string) => store.collections.threads.updateOne({ _id: thread }, { $set: { expires_at: new Date(Date.now() - 1000) } });
  const documents = async (thread: string) => {
    const { checkpoints, blobs, writes, chunks } = store.collections;
    const where = { thread_id: thread };
    return [await checkpoints.countDocuments(where), await blobs.countDocuments(where), await writes.countDocuments(where), await chunks.countDocuments(where)];
  };
  const listed = async (query: Parameters<MongoDBStore["listCheckpoints"]>[0], thread: string) => {
    const ids: string[] = [];
    for await (const stored of store.listCheckpoints(query)) if (stored.record.threadId === thread) ids.push(stored.record.checkpointId);
    return ids;
  };

  it("moves a thread's expiry forward on every write, and keeps it whole until then", async () => {
    const thread = threadId("live");
    const before = Date.now();
    await fill(thread);
    const marker = await store.collections.threads.findOne({ _id: thread });
    expect(marker!.expires_at.getTime()).toBeGreaterThanOrEqual(before + 3600_000);
    expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(2));
    expect(await store.deleteExpiredThreads()).toBe(0);
    expect(await documents(thread)).toEqual([3, 3, 3, 3]);
  });

  it("hides an expired thread from every read at once, then deletes all of it", async () => {
    const [gone, kept] = [threadId("gone"), threadId("kept")];
    await fill(gone);
    await fill(kept);
    await expire(gone);
    expect(await store.getCheckpoint({ threadId: gone, checkpointNs: "" })).toBeUndefined();
    expect(await store.getCheckpoint({ threadId: gone, checkpointNs: "", checkpointId: cid(1) })).toBeUndefined();
    expect(await listed({ threadId: gone }, gone)).toEqual([]);
    expect(await listed({}, gone)).toEqual([]);
    expect((await store.getHistory({ threadId: gone, checkpointNs: "", checkpointId: cid(2), channels: ["a"] })).ancestors).toEqual([]);
    expect(await listed({}, kept)).toEqual([cid(2), cid(1), cid(0)]);
    expect(await store.deleteExpiredThreads()).toBeGreaterThanOrEqual(1);
    expect(await documents(gone)).toEqual([0, 0, 0, 0]);
    expect(await store.collections.threads.findOne({ _id: gone })).toBeNull();
    expect(await documents(kept)).toEqual([3, 3, 3, 3]);
  });

  it("a write to an expired thread deletes it first: the new run sees nothing of the old one", async () => {
    const thread = threadId("reborn");
    await fill(thread);
    await expire(thread);
    await store.putCheckpoint({ record: record(thread, cid(9), { channelVersions: { b: "1" } }), blobs: [blob("b", "1")], chunks: [] });
    expect(await listed({ threadId: thread }, thread)).toEqual([cid(9)]);
    expect(await documents(thread)).toEqual([1, 1, 0, 0]);
  });

  it("a write during a sweep's deletion fails with StoreBusyError and stores nothing; a stale claim is taken over", async () => {
    const thread = threadId("claimed");
    await fill(thread);
    // Another process claimed the expired thread and is deleting it.
    await store.collections.threads.updateOne({ _id: thread }, { $set: { expires_at: new Date(Date.now() - 1000), deleting: new Date() } });
    const error = await store
      .putCheckpoint({ record: record(thread, cid(7)), blobs: [blob("z", "1")], chunks: [] })
      .then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(StoreBusyError);
    expect(await store.collections.blobs.countDocuments({ thread_id: thread, channel: "z" })).toBe(0);
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
    // That process died: after a minute its claim is stale, and the next sweep finishes the job.
    await store.collections.threads.updateOne({ _id: thread }, { $set: { deleting: new Date(Date.now() - 120_000) } });
    expect(await store.deleteExpiredThreads()).toBeGreaterThanOrEqual(1);
    expect(await documents(thread)).toEqual([0, 0, 0, 0]);
  });

  it("keeps threads written before the TTL was turned on until their next write", async () => {
    const thread = threadId("old");
    const plain = new MongoDBStore(server.client, { dbName: store.db.databaseName });
    await plain.putCheckpoint({ record: record(thread, cid(0)), blobs: [], chunks: [] });
    expect(await store.collections.threads.findOne({ _id: thread })).toBeNull();
    expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    await store.putCheckpoint({ record: record(thread, cid(1), { parentCheckpointId: cid(0) }), blobs: [], chunks: [] });
    expect(await store.collections.threads.findOne({ _id: thread })).not.toBeNull();
  });

  it("does not need TTL indexes, which FerretDB refuses (what the server allows, recorded)", async () => {
    const probe = server.client.db(store.db.databaseName).collection("ttl_probe");
    const outcome = await probe.createIndex({ at: 1 }, { expireAfterSeconds: 60, name: "ttl_probe" }).then(
      () => "created",
      (error: { code?: number; message: string }) => `refused: ${error.code} ${error.message}`,
    );
    if (server.server.engine.startsWith("ferretdb")) {
      expect(outcome).toMatch(/^refused: 238 .*expireAfterSeconds.*not implemented/);
    } else {
      console.info(`TTL index on ${server.server.engine}: ${outcome}`);
    }
    // The store set itself up on the same server without one.
    const indexes = await store.collections.threads.indexes();
    expect(indexes.some((index) => "expireAfterSeconds" in index)).toBe(false);
  });
});
