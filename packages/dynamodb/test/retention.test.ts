// Retention on DynamoDB, counted in the table itself rather than through the store's own listing:
// spilled items leave with their spill chunks and kept ones keep theirs, batch commit items go with
// their writes, a hashed namespace's orphans are still removed, expired threads are left to TTL, the
// lease item is never removed and the status follows (manyWorkers, moto), a prune is two Queries and
// one BatchWriteItem per 25 items whatever the thread's length, and bad input removes nothing.
import { createHash } from "node:crypto";

import { DeleteItemCommand, UpdateItemCommand, type AttributeValue, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { chatGraph, chatTurns } from "@resumable/conformance";
import { InvalidConfigError, LeaseLostError, ResumableSaver, checkpointKey as recordKey, planRetention, type ChunkRecord, type SerializedValue } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { DynamoDBClientLike, DynamoDBStore } from "../src/index.js";
import { spillRef } from "../src/items.js";
import { blobKey, checkpointKey, writesPrefix } from "../src/keys.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, blob, cid, clientFor, freshStore, json, rawItems, record, threadId, write } from "./helpers.js";

type RawItem = Record<string, AttributeValue>;

const sha256 = (data: Uint8Array | string) => createHash("sha256").update(data).digest("hex");
/** Piece references enough to push an item over 400 KB (8,000 × 64 characters), so that it spills. */
const manyRefs = (seed: string) => Array.from({ length: 8_000 }, (_, i) => sha256(`${seed}-${i}`));
/** A shared piece: its chunk, and a value that references it. */
function piece(content: string): { chunk: ChunkRecord; value: SerializedValue } {
  const data = new TextEncoder().encode(content);
  const hash = sha256(data);
  return { chunk: { hash, index: 0, data }, value: { type: "json", data: new Uint8Array([0]), refs: [hash] } };
}
/** A value stored in two chunks. */
function chunked(content: string): { chunks: ChunkRecord[]; value: SerializedValue } {
  const data = new TextEncoder().encode(content);
  const hash = sha256(data);
  const half = Math.ceil(data.byteLength / 2);
  return {
    chunks: [
      { hash, index: 0, data: data.subarray(0, half) },
      { hash, index: 1, data: data.subarray(half) },
    ],
    value: { type: "json", data: new Uint8Array(0), chunkRef: { hash, count: 2, size: data.byteLength } },
  };
}

const sk = (item: RawItem) => item["sk"]!.S!;
const kind = (prefix: string) => (items: RawItem[]) => items.map(sk).filter((k) => k.startsWith(prefix)).sort();
const checkpointItems = kind("c|");
const blobItems = kind("b|");
const writeItems = kind("w|");
/** The chunk items' keys, and the spill references (hash, count) of every other item. */
const chunkHashes = (items: RawItem[]) => new Set(kind("k|")(items).map((k) => k.slice(5, 5 + Number(k.slice(2, 5)))));
function spills(items: RawItem[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of items) {
    const ref = spillRef(item as never);
    if (ref) out.set(ref.hash, ref.count);
  }
  return out;
}

describe.each(EMULATORS)("retention on %s", (emulator) => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let tableName: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    ({ store, tableName, drop } = await freshStore(client, "retention"));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  it("prune takes spilled items with their spill chunks and batch commit items with their writes, and leaves every item a kept checkpoint reads", { timeout: 120_000 }, async () => {
    const thread = threadId("spilled");
    const oldPiece = piece("old piece");
    const keptPiece = piece("kept piece");
    const oldChunked = chunked("o".repeat(3000));
    const note = "m".repeat(300_000);
    // cp-1: a checkpoint item spilled by its metadata, a spilled blob, a shared piece, a chunked value,
    // and a batch of two writes (one spilled) with its commit item.
    await store.putCheckpoint({
      record: record(thread, cid(1), { metadata: json({ note }), metadataJson: { note }, channelVersions: { big: "1", a: "1", c: "1" } }),
      blobs: [
        { channel: "big", version: "1", value: { ...json("old"), refs: manyRefs("old") } },
        { channel: "a", version: "1", value: oldPiece.value },
        { channel: "c", version: "1", value: oldChunked.value },
      ],
      chunks: [oldPiece.chunk, ...oldChunked.chunks],
    });
    await store.putWrites({
      threadId: thread,
      checkpointNs: "",
      checkpointId: cid(1),
      writes: [write("task-1", 0, "a", 1), { ...write("task-1", 1, "big", 2), value: { ...json(2), refs: manyRefs("w1") } }],
      chunks: [],
      mode: "ignore",
    });
    await store.putCheckpoint({ record: record(thread, cid(2), { parentCheckpointId: cid(1), channelVersions: { big: "1", a: "1", c: "1" } }), blobs: [], chunks: [] });
    // cp-3, the one prune keeps: its own spilled blob, a shared piece, and a batch with a spilled write.
    await store.putCheckpoint({
      record: record(thread, cid(3), { parentCheckpointId: cid(2), channelVersions: { big: "3", a: "3" } }),
      blobs: [
        { channel: "big", version: "3", value: { ...json("new"), refs: manyRefs("new") } },
        { channel: "a", version: "3", value: keptPiece.value },
      ],
      chunks: [keptPiece.chunk],
    });
    await store.putWrites({
      threadId: thread,
      checkpointNs: "",
      checkpointId: cid(3),
      writes: [write("task-3", 0, "a", 3), { ...write("task-3", 1, "big", 4), value: { ...json(4), refs: manyRefs("w3") } }],
      chunks: [],
      mode: "ignore",
    });
    const kept = await store.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(3) });
    const before = await rawItems(client, tableName, thread);
    // The premise: five items spilled (cp-1's checkpoint, two blobs, two writes), two batches committed.
    expect(before.filter((i) => i["x"] !== undefined).map((i) => sk(i).slice(0, 1)).sort()).toEqual(["b", "b", "c", "w", "w"]);
    expect(before.filter((i) => i["wc"] !== undefined)).toHaveLength(2);

    const result = await new ResumableSaver(store).prune([thread], { keepLast: 1 });

    const after = await rawItems(client, tableName, thread);
    expect(checkpointItems(after)).toEqual([checkpointKey("", cid(3))]);
    expect(blobItems(after)).toEqual([blobKey("", "a", "3"), blobKey("", "big", "3")]);
    // cp-3's two writes and its commit item; none of cp-1's.
    const own = writeItems(after);
    expect(own).toHaveLength(3);
    expect(own.every((k) => k.startsWith(writesPrefix("", cid(3))))).toBe(true);
    expect(after.filter((i) => i["wc"] !== undefined)).toHaveLength(1);
    // Chunks: the kept piece and the spill chunks of the two kept spilled items (every index), nothing else.
    const spilled = spills(after);
    expect([...spilled.keys()]).toHaveLength(2);
    expect(chunkHashes(after)).toEqual(new Set([keptPiece.chunk.hash, ...spilled.keys()]));
    expect(kind("k|")(after)).toHaveLength(1 + [...spilled.values()].reduce((a, b) => a + b, 0));
    expect({ ...result, bytes: 0 }).toEqual({ threads: 1, checkpoints: 2, writes: 2, blobs: 3, chunks: 3, bytes: 0, keptForHistory: 0 });
    // The kept checkpoint reads back exactly as before, spilled items and all.
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(3) })).toEqual(kept);
    // The listing sees nothing left to remove.
    const records = await store.listThreadRecords(thread);
    const all = new Set(records.checkpoints.map((r) => recordKey(r.checkpointNs, r.checkpointId)));
    expect(planRetention(records, all, new Map()).request).toEqual({ checkpoints: [], blobs: [], chunks: [] });
  });

  it("removes the records of a hashed namespace whose checkpoints are gone, which only its checkpoints could name", async () => {
    const thread = threadId("hashed-ns");
    const ns = `team:${"n".repeat(300)}`;
    await store.putCheckpoint({ record: record(thread, cid(1), { checkpointNs: ns, channelVersions: { a: "1" } }), blobs: [blob("a", "1")], chunks: [] });
    await store.putWrites({ threadId: thread, checkpointNs: ns, checkpointId: cid(1), writes: [write("task", 0, "a", 1)], chunks: [], mode: "ignore" });
    await store.putCheckpoint({ record: record(thread, cid(2)), blobs: [], chunks: [] });
    // While its checkpoint exists, the namespace is listed by its name.
    const named = await store.listThreadRecords(thread);
    expect(named.blobs.map((b) => b.checkpointNs)).toEqual([ns]);
    expect(named.writes.map((w) => w.checkpointNs)).toEqual([ns]);
    // As a crash after the first step of a removal leaves it: the checkpoint item gone, its parts left.
    await client.send(new DeleteItemCommand({ TableName: tableName, Key: { pk: { S: thread }, sk: { S: checkpointKey(ns, cid(1)) } } }));

    const result = await new ResumableSaver(store).prune([thread], { keepLast: 1 });

    expect({ checkpoints: result.checkpoints, writes: result.writes, blobs: result.blobs }).toEqual({ checkpoints: 0, writes: 1, blobs: 1 });
    expect((await rawItems(client, tableName, thread)).map(sk)).toEqual([checkpointKey("", cid(2))]);
  });

  it("lists nothing of a thread whose TTL epoch has passed, and removes nothing of it (DynamoDB's TTL does)", async () => {
    const { store: ttlStore, drop: dropTtl, tableName: ttlTable } = await freshStore(client, "retention_ttl", { ttl: { seconds: 3600 } });
    try {
      const thread = threadId("ttl");
      for (let i = 1; i <= 3; i += 1) {
        await ttlStore.putCheckpoint({ record: record(thread, cid(i), { channelVersions: { a: String(i) } }), blobs: [blob("a", String(i))], chunks: [] });
      }
      // Live: the TTL attribute is no obstacle to the listing or the removal.
      expect((await new ResumableSaver(ttlStore).prune([thread], { keepLast: 1 })).checkpoints).toBe(2);
      const left = await rawItems(client, ttlTable, thread);
      expect(left).toHaveLength(2);
      // Expired (as DynamoDB sees it, hours before it deletes the items): the thread has no records.
      for (const item of left) {
        await client.send(
          new UpdateItemCommand({ TableName: ttlTable, Key: { pk: item["pk"]!, sk: item["sk"]! }, UpdateExpression: "SET expires_at = :e", ExpressionAttributeValues: { ":e": { N: "1000" } } }),
        );
      }
      expect(await ttlStore.listThreadRecords(thread)).toEqual({ checkpoints: [], blobs: [], writes: [], chunks: [] });
      expect((await new ResumableSaver(ttlStore).prune([thread], { keepLast: 1 })).checkpoints).toBe(0);
      expect(await rawItems(client, ttlTable, thread)).toHaveLength(2);
    } finally {
      await dropTtl();
    }
  });

  it("refuses bad input with InvalidConfigError naming the field, and removes nothing", async () => {
    const thread = threadId("bad");
    await store.putCheckpoint({ record: record(thread, cid(1), { channelVersions: { a: "1" } }), blobs: [blob("a", "1")], chunks: [] });
    await store.putCheckpoint({ record: record(thread, cid(2), { channelVersions: { a: "2" } }), blobs: [blob("a", "2")], chunks: [] });
    const before = await rawItems(client, tableName, thread);
    const removal = { threadId: thread, checkpoints: [{ checkpointNs: "", checkpointId: cid(1) }], blobs: [{ checkpointNs: "", channel: "a", version: "1" }], chunks: [] };
    const cases: Array<[string, Parameters<DynamoDBStore["deleteRecords"]>[0]]> = [
      ["checkpoint_ns", { ...removal, checkpoints: [{ checkpointNs: "a\u0000b", checkpointId: cid(1) }] }],
      ["checkpoint_ns", { ...removal, blobs: [{ checkpointNs: "\u0000#not-a-hash", channel: "a", version: "1" }] }],
      ["checkpoint_id", { ...removal, checkpoints: [{ checkpointNs: "", checkpointId: "" }] }],
      ["channel version", { ...removal, blobs: [{ checkpointNs: "", channel: "a", version: "v".repeat(300) }] }],
      ["chunk hash", { ...removal, chunks: ["h".repeat(600)] }],
      // A fence or a status needs manyWorkers (the lease and status items, and transactions).
      ["manyWorkers", { ...removal, fence: { token: 1, workerId: "w" } }],
      ["manyWorkers", { ...removal, status: null }],
    ];
    for (const [field, request] of cases) {
      const error = await store.deleteRecords(request).then(() => undefined, (e: unknown) => e);
      expect(error, field).toBeInstanceOf(InvalidConfigError);
      expect((error as InvalidConfigError).field, field).toBe(field);
    }
    expect(await rawItems(client, tableName, thread)).toEqual(before);
  });

  it("prune is two Queries and one BatchWriteItem per 25 removed items, whatever the thread's length; never a Scan", { timeout: 120_000 }, async () => {
    const counter = new FaultClient(client);
    const { store: counted, drop: dropCounted } = await freshStore(counter, "retention_requests", {}, client);
    try {
      const requests: Record<number, Record<string, number>> = {};
      for (const n of [10, 40]) {
        const thread = threadId(`requests-${n}`);
        for (let i = 1; i <= n; i += 1) {
          await counted.putCheckpoint({
            record: record(thread, cid(i), { parentCheckpointId: i > 1 ? cid(i - 1) : undefined, channelVersions: { a: String(i).padStart(3, "0") } }),
            blobs: [blob("a", String(i).padStart(3, "0"))],
            chunks: [],
          });
          await counted.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(i), writes: [write("t", 0, "a", i), write("t", 1, "b", i)], chunks: [], mode: "ignore" });
        }
        counter.reset();
        const result = await new ResumableSaver(counted).prune([thread], { keepLast: 1 });
        requests[n] = Object.fromEntries(counter.calls);
        expect(result.checkpoints).toBe(n - 1);
        // Removed: n - 1 checkpoint items, their n - 1 commit items, 2(n - 1) writes, n - 1 blobs.
        const batches = 3 * Math.ceil((n - 1) / 25) + Math.ceil((2 * (n - 1)) / 25);
        expect(requests[n], `thread of ${n} checkpoints`).toEqual({ Query: 2, BatchWriteItem: batches });
      }
      console.info(`prune requests on ${emulator}: ${JSON.stringify(requests)}`);
    } finally {
      await dropCounted();
    }
  });
});

/**
 * In front of a real client: once armed, lets `pass` write requests (TransactWriteItems or
 * BatchWriteItem) through, then fails the next one without sending it (as a process that stops
 * there), and disarms.
 */
class StopAfterWrites implements DynamoDBClientLike {
  armed = false;
  pass = 0;
  constructor(readonly inner: DynamoDBClientLike) {}
  async send(command: any): Promise<any> {
    const name = String(command.constructor.name);
    if (this.armed && (name === "TransactWriteItemsCommand" || name === "BatchWriteItemCommand")) {
      if (this.pass > 0) this.pass -= 1;
      else {
        this.armed = false;
        throw Object.assign(new Error("the process stops here (injected)"), { name: "InjectedStop" });
      }
    }
    return this.inner.send(command);
  }
}

describe("retention with manyWorkers on moto", () => {
  let client: DynamoDBClient;
  let stopper: StopAfterWrites;
  let store: DynamoDBStore;
  let tableName: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor("moto");
    stopper = new StopAfterWrites(client);
    ({ store, tableName, drop } = await freshStore(stopper, "retention_mw", { manyWorkers: true }, client));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  it("a leased prune and deleteForRuns never remove the lease item; removing every root checkpoint removes the status; a lost lease removes nothing", { timeout: 120_000 }, async () => {
    const saver = new ResumableSaver(store);
    const thread = threadId("lease");
    await chatTurns(chatGraph("plain", saver), thread, 0, 3, thread);
    const lease = await saver.claimLease(thread, { workerId: "worker-1", ttlMs: 60_000 });
    expect(lease).toBeDefined();
    const leased = saver.withLease(lease!);
    const leaseItem = async () => (await rawItems(client, tableName, thread)).find((i) => sk(i) === "l|");
    const leaseBefore = await leaseItem();

    expect((await leased.prune([thread], { keepLast: 1 })).checkpoints).toBeGreaterThan(0);
    expect(await leaseItem()).toEqual(leaseBefore);

    const removed = await leased.deleteForRuns([0, 1, 2].map((i) => `${thread}-${i}`));
    expect(removed.checkpoints).toBeGreaterThan(0);
    // Nothing is left of the thread but its lease item, token unchanged: no status, no record.
    expect(await rawItems(client, tableName, thread)).toEqual([leaseBefore]);
    expect(await saver.getThreadStatus(thread)).toBeUndefined();

    // Another worker takes the thread over; the first one's prune is refused and removes nothing.
    await chatTurns(chatGraph("plain", saver), thread, 3, 5, thread);
    await saver.releaseLease(lease!);
    expect(await saver.claimLease(thread, { workerId: "worker-2", ttlMs: 60_000 })).toBeDefined();
    const before = await rawItems(client, tableName, thread);
    await expect(leased.prune([thread], { keepLast: 1 })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await rawItems(client, tableName, thread)).toEqual(before);
  });

  it("a deleteForRuns stopped after its first removal leaves the status naming a checkpoint that stays, and a second run completes it", { timeout: 120_000 }, async () => {
    const saver = new ResumableSaver(store);
    const thread = threadId("rollback");
    await chatTurns(chatGraph("plain", saver), thread, 0, 4, thread);
    stopper.armed = true;
    stopper.pass = 1;
    await expect(saver.deleteForRuns([`${thread}-2`, `${thread}-3`])).rejects.toThrow(/injected/);
    expect(stopper.armed).toBe(false);
    const latest = async () => (await saver.getTuple({ configurable: { thread_id: thread } }))?.checkpoint.id;
    expect((await saver.getThreadStatus(thread))?.checkpointId).toBe(await latest());
    await saver.deleteForRuns([`${thread}-2`, `${thread}-3`]);
    const status = await saver.getThreadStatus(thread);
    expect(status?.checkpointId).toBe(await latest());
    expect(status?.state).toBe("done");
    const runs = new Set<unknown>();
    for await (const tuple of saver.list({ configurable: { thread_id: thread } })) runs.add(tuple.metadata?.["run_id" as never]);
    expect([...runs].sort()).toEqual([`${thread}-0`, `${thread}-1`]);
  });
});
