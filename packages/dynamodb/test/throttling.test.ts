// Throttling and unprocessed batch items, injected by a wrapper in front of a real client on each
// emulator: every operation still completes with the right data, and a store that gives up leaves
// nothing half-visible.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ResumableSaver } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBThrottledError, type DynamoDBStore } from "../src/index.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, blob, chunkOf, cid, clientFor, collect, decode, freshStore, json, record, threadId, write } from "./helpers.js";

describe.each(EMULATORS)("throttling and unprocessed items on %s", (emulator) => {
  let client: DynamoDBClient;
  let faulty: FaultClient;
  let store: DynamoDBStore;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    faulty = new FaultClient(client);
    // Short backoffs keep the test fast; the attempts are what is checked.
    ({ store, drop } = await freshStore(faulty, "throttling", { retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 6 } }, client));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  /** A checkpoint with 60 blobs (three batches of 25) and 30 chunks of 2 values. */
  async function bigCheckpoint(thread: string) {
    const blobs = Array.from({ length: 60 }, (_, i) => blob(`ch${i}`, `v${i}`, json({ i })));
    const chunks = [...Array.from({ length: 20 }, (_, i) => chunkOf("hashA", i, `a${i}`)), ...Array.from({ length: 10 }, (_, i) => chunkOf("hashB", i, `b${i}`))];
    await store.putCheckpoint({ record: record(thread, cid(1), { channelVersions: Object.fromEntries(blobs.map((b) => [b.channel, b.version])) }), blobs, chunks });
    return { blobs, chunks };
  }

  it("retries ProvisionedThroughputExceededException and ThrottlingException on every kind of request, with backoff, and completes", async () => {
    const thread = threadId("throttle");
    faulty.reset();
    faulty.plan = { throttle: { BatchWriteItem: 3, PutItem: 3, Query: 3, BatchGetItem: 3 } };
    await bigCheckpoint(thread);
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [write("task", 0, "ch1", "w")], chunks: [], mode: "ignore" });
    const got = await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
    expect(got?.blobs).toHaveLength(60);
    expect(got?.writes.map((w) => decode(w.value))).toEqual(["w"]);
    expect((await store.getChunks(thread, ["hashA", "hashB"])).length).toBe(30);
    expect(faulty.injected.get("ProvisionedThroughputExceededException")).toBeGreaterThan(0);
    expect(faulty.injected.get("ThrottlingException")).toBeGreaterThan(0);
    faulty.plan = {};
  });

  it("retries unprocessed items of BatchWriteItem and unprocessed keys of BatchGetItem until every one is done", async () => {
    const thread = threadId("unprocessed");
    faulty.reset();
    faulty.plan = { batchProgress: 7 };
    const { blobs } = await bigCheckpoint(thread);
    const got = await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
    expect(got?.blobs.map((b) => decode(b.value)).sort((a, b) => (a as { i: number }).i - (b as { i: number }).i)).toEqual(blobs.map((b) => decode(b.value)));
    const chunks = await store.getChunks(thread, ["hashA", "hashB"]);
    expect(chunks.map((c) => `${c.hash}#${c.index}`).sort()).toHaveLength(30);
    // 90 items written 7 at a time and 60 blobs plus 30 chunks read 7 at a time: many went back.
    expect(faulty.unprocessed).toBeGreaterThan(100);
    expect(faulty.calls.get("BatchWriteItem")).toBeGreaterThanOrEqual(Math.ceil(90 / 7));
    faulty.plan = {};
    await store.deleteThread(thread);
    faulty.plan = { batchProgress: 3 };
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
    faulty.plan = {};
  });

  it("gives up with DynamoDBThrottledError after maxAttempts, and the checkpoint it could not finish stays invisible", async () => {
    const thread = threadId("giveup");
    faulty.reset();
    faulty.plan = { alwaysThrottle: ["BatchWriteItem"] };
    const error = await bigCheckpoint(thread).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DynamoDBThrottledError);
    expect((error as DynamoDBThrottledError).attempts).toBe(6);
    expect((error as Error).message).toMatch(/putCheckpoint.*6 attempts.*retrying is safe/s);
    faulty.plan = {};
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();

    // A batch that stops making progress gives up too; one that progresses never does (above).
    faulty.plan = { batchProgress: 0 };
    const stuck = await bigCheckpoint(thread).catch((e: unknown) => e);
    expect(stuck).toBeInstanceOf(DynamoDBThrottledError);
    expect((stuck as Error).message).toMatch(/stayed unprocessed/);
    faulty.plan = {};
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "" })).toBeUndefined();
    expect(await collect(store.listCheckpoints({ threadId: thread }))).toEqual([]);
  });

  it("runs a saver through throttling on every request: the thread reads back whole", async () => {
    const thread = threadId("saver");
    faulty.reset();
    faulty.plan = { throttle: { BatchWriteItem: 2, PutItem: 2, Query: 2, BatchGetItem: 2, GetItem: 2 } };
    const saver = new ResumableSaver(store);
    const config = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const checkpoint = { v: 4, id: cid(7), ts: new Date(0).toISOString(), channel_values: { a: "x".repeat(1000), b: [1, 2] }, channel_versions: { a: 1, b: 1 }, versions_seen: {} };
    const saved = await saver.put(config, checkpoint, { source: "loop", step: 0, parents: {} }, { a: 1, b: 1 });
    await saver.putWrites(saved, [["a", "pending"]], "task-1");
    const tuple = await saver.getTuple(saved);
    expect(tuple?.checkpoint.channel_values).toEqual(checkpoint.channel_values);
    expect(tuple?.pendingWrites).toEqual([["task-1", "a", "pending"]]);
    expect(faulty.injected.size).toBe(2);
    faulty.plan = {};
  });
});
