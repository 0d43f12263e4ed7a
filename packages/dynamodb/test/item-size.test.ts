// Item sizes as DynamoDB counts them, and values around and far beyond the 400 KB item limit, on both
// emulators: dynalite enforces 409,600 bytes exactly (as AWS does), moto 5.2.5 405,000.
import { PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DEFAULT_MAX_ITEM_BYTES, DynamoDBSaver, itemSize, type DynamoDBStore, type Item } from "../src/index.js";
import { blobItem } from "../src/items.js";
import { EMULATORS, clientFor, collect, freshStore, json, rawItems, record, threadId, write } from "./helpers.js";

/** The largest item each emulator accepts, measured (names plus values). */
const EMULATOR_LIMIT = { dynalite: 409_600, moto: 405_000 } as const;

const KB = 1024;

function checkpoint(id: string, values: Record<string, unknown>): Checkpoint {
  return {
    v: 4,
    id,
    ts: new Date(0).toISOString(),
    channel_values: values,
    channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, 1])),
    versions_seen: {},
  };
}

/** Byte equality without vitest's element-by-element diffing (slow on megabytes). */
function sameBytes(actual: unknown, expected: Uint8Array): boolean {
  return actual instanceof Uint8Array && Buffer.from(actual.buffer, actual.byteOffset, actual.byteLength).equals(Buffer.from(expected.buffer, expected.byteOffset, expected.byteLength));
}

/** Seeded bytes that do not compress. */
function noise(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < size; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

describe.each(EMULATORS)("item sizes on %s", (emulator) => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let tableName: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    ({ store, tableName, drop } = await freshStore(client, "sizes"));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  const put = (item: Item) => client.send(new PutItemCommand({ TableName: tableName, Item: item })).then(
    () => "stored",
    (error: Error) => error.name,
  );

  it("counts attribute names and values as the emulator does: an item of exactly its limit is stored, one byte more is refused", async () => {
    const limit = EMULATOR_LIMIT[emulator];
    const base = { pk: { S: threadId("size") }, sk: { S: "exact" }, attribute_name: { B: new Uint8Array(0) } };
    const sized = (total: number): Item => ({ ...base, attribute_name: { B: new Uint8Array(total - itemSize(base)) } });
    expect(itemSize(sized(limit))).toBe(limit);
    expect(await put(sized(limit))).toBe("stored");
    expect(await put(sized(limit + 1))).toBe("ValidationException");
    // Strings count in UTF-8 bytes (AWS, moto); dynalite counts UTF-16 code units, so never more.
    const text = (total: number): Item => {
      const room = total - itemSize(base);
      return { ...base, attribute_name: { S: `${room % 2 ? "a" : ""}${"é".repeat(Math.floor(room / 2))}` } };
    };
    expect(itemSize(text(limit))).toBe(limit);
    expect(await put(text(limit))).toBe("stored");
    expect(await put({ ...text(limit), x: { S: "y" } })).toBe(emulator === "moto" ? "ValidationException" : "stored");
  });

  it("declares chunks that fit one item after the keys and attribute names, within the default 400,000 bytes", () => {
    expect(store.capabilities.maxItemBytes).toBe(DEFAULT_MAX_ITEM_BYTES - 1024);
  });

  // A value whose blob item, with its keys and attribute names, would be this size if stored whole.
  const targets = [
    ["399 KB", 399 * KB],
    ["400 KB", 400 * KB],
    ["401 KB", 401 * KB],
    ["exactly the chunk size", 0],
    ["5 MB", 5 * KB * KB],
  ] as const;

  it.each(targets)("a value that makes an item %s round-trips as a channel value and a pending write, in items within the limit", { timeout: 300_000 }, async (_label, target) => {
    const thread = threadId("big");
    const saver = new DynamoDBSaver(store);
    const overhead = itemSize(blobItem(thread, "", { channel: "big", version: "x".repeat(32 + 1 + 16), value: { type: "bytes", data: new Uint8Array(0) } }, {}));
    const size = target === 0 ? store.capabilities.maxItemBytes! : target - overhead;
    const value = noise(size, size);
    const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, checkpoint("cp-1", { big: value, small: "s" }), { source: "loop", step: 0, parents: {} }, { big: 1, small: 1 });
    await saver.putWrites(config, [["big", value]], "task-1");
    const fresh = new DynamoDBSaver(store);
    const tuple = await fresh.getTuple(config);
    expect(sameBytes(tuple?.checkpoint.channel_values["big"], value)).toBe(true);
    expect(tuple?.checkpoint.channel_values["small"]).toBe("s");
    expect(sameBytes(tuple?.pendingWrites?.[0]?.[2], value)).toBe(true);
    const [listed] = await collect(fresh.list({ configurable: { thread_id: thread } }));
    expect(sameBytes(listed?.checkpoint.channel_values["big"], value)).toBe(true);
    const items = await rawItems(client, tableName, thread);
    expect(Math.max(...items.map((i) => itemSize(i as Item)))).toBeLessThanOrEqual(DEFAULT_MAX_ITEM_BYTES);
    // The value is in the table about once per place it is stored (blob, write), not more.
    const stored = items.reduce((sum, i) => sum + itemSize(i as Item), 0);
    expect(stored).toBeLessThan(2 * size * 1.1 + 10 * KB);
  });

  it("spills an item that its keys, metadata or references push over the limit, and reads it back", { timeout: 300_000 }, async () => {
    const thread = threadId("spill".repeat(40));
    const ns = "n".repeat(150);
    const saver = new DynamoDBSaver(store);
    // Metadata of 1 MB: serialized (split into chunks by core) and as JSON, in one checkpoint item.
    const metadata = { source: "loop" as const, step: 3, parents: {}, note: "m".repeat(1024 * 1024) };
    const value = noise(store.capabilities.maxItemBytes!, 7);
    const config = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: ns } }, checkpoint("cp-1", { ["c".repeat(200)]: value }), metadata, { ["c".repeat(200)]: 1 });
    await saver.putWrites(config, [["c".repeat(200), value]], "t".repeat(200), "p".repeat(16_000));
    const fresh = new DynamoDBSaver(store);
    const tuple = await fresh.getTuple(config);
    expect(tuple?.metadata).toEqual(metadata);
    expect(sameBytes(tuple?.checkpoint.channel_values["c".repeat(200)], value)).toBe(true);
    expect(sameBytes(tuple?.pendingWrites?.[0]?.[2], value)).toBe(true);
    const filtered = await collect(fresh.list({ configurable: { thread_id: thread, checkpoint_ns: ns } }, { filter: { note: metadata.note } }));
    expect(filtered).toHaveLength(1);
    expect(await collect(fresh.list({ configurable: { thread_id: thread } }, { filter: { note: "other" } }))).toHaveLength(0);
    const items = await rawItems(client, tableName, thread);
    // The checkpoint (its metadata) and the write (its task path) spilled; the blob fit.
    expect(items.filter((i) => i["x"] !== undefined).map((i) => i["sk"]!.S!.slice(0, 1)).sort()).toEqual(["c", "w"]);
    expect(Math.max(...items.map((i) => itemSize(i as Item)))).toBeLessThanOrEqual(DEFAULT_MAX_ITEM_BYTES);

    // A value made of 20,000 shared pieces: its reference list alone is over a megabyte.
    const refs = Array.from({ length: 20_000 }, (_, i) => `${String(i).padStart(64, "0")}`);
    await store.putCheckpoint({ record: record(thread, "cp-2", { channelVersions: { r: "1" } }), blobs: [{ channel: "r", version: "1", value: { ...json("x"), refs } }], chunks: [] });
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: "cp-2", writes: [{ ...write("task", 0, "r", 1), value: { ...json(1), refs } }], chunks: [], mode: "ignore" });
    const got = await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
    expect(got?.blobs[0]?.value.refs).toEqual(refs);
    expect(got?.writes[0]?.value.refs).toEqual(refs);

    // A blob of exactly the chunk size behind keys at their longest (512-byte thread id, 200-byte
    // namespace, 256-byte channel and version) is over the item limit by its keys alone.
    const longThread = threadId("l").padEnd(512, "l");
    const longNs = "s".repeat(200);
    const channel = "h".repeat(256);
    const version = "9".repeat(256);
    const data = noise(store.capabilities.maxItemBytes!, 9);
    await store.putCheckpoint({
      record: record(longThread, "cp-1", { checkpointNs: longNs, channelVersions: { [channel]: version } }),
      blobs: [{ channel, version, value: { type: "bytes", data }, baseVersion: "8".repeat(256) }],
      chunks: [],
    });
    const long = await store.getCheckpoint({ threadId: longThread, checkpointNs: longNs });
    expect(long?.blobs.map((b) => [b.channel, b.version, b.baseVersion, sameBytes(b.value.data, data)])).toEqual([[channel, version, "8".repeat(256), true]]);
    expect(sameBytes((await store.getBlobs({ threadId: longThread, checkpointNs: longNs }, [{ channel, version }]))[0]?.value.data, data)).toBe(true);
    const blobItems = (await rawItems(client, tableName, longThread)).filter((i) => i["sk"]!.S!.startsWith("b|"));
    expect(blobItems.map((i) => i["x"] !== undefined)).toEqual([true]);
  });
});
