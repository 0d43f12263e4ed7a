/**
 * Records as items, and back. Attribute names are short because DynamoDB counts (and bills) them in
 * every item:
 *
 * | item       | attributes                                                                        |
 * | ---------- | --------------------------------------------------------------------------------- |
 * | checkpoint | `p` parent id, `c*` checkpoint, `m*` metadata, `mj` metadata JSON, `cv` channel versions (JSON), `dr` delta roots (JSON), `ns` namespace (when hashed in the key) |
 * | blob       | `v*` value, `bv` base version                                                       |
 * | write      | `ch` channel, `v*` value, `tp` task path, `bt` batch token (in a batch of several)  |
 * | batch commit | `wc` the batch token                                                            |
 * | chunk      | `d` bytes, `n` chunk count (on index 0)                                              |
 *
 * A value `X` is `Xt` (type), `Xd` (bytes; absent when empty), `Xc` (chunk reference, JSON) and `Xr`
 * (piece references, JSON). An item that would still exceed the item budget (a value right at the
 * limit behind long keys, megabytes of metadata, thousands of references) keeps only its keys and
 * `x`, a chunk reference to its other attributes, encoded and stored as chunks of the thread.
 *
 * @module
 */
import { createHash } from "node:crypto";

import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import {
  ValueTooLargeError,
  joinChunks,
  type BlobRecord,
  type CheckpointRecord,
  type ChunkRecord,
  type ChunkRef,
  type SerializedValue,
  type WriteRecord,
} from "@resumable/core";

import { itemSize, type Item } from "./item-size.js";
import {
  PK,
  SK,
  blobKey,
  checkpointKey,
  chunkKey,
  nsIsHashed,
  parseBlobKey,
  parseCheckpointKey,
  parseChunkKey,
  parseWriteKey,
  writeCommitKey,
  writeKey,
} from "./keys.js";
import { MANY_WORKERS_ATTRIBUTES } from "./many-workers.js";

/** Attributes a spilled item keeps in place: its keys, and what queries read without loading it. */
const KEPT_WHEN_SPILLED = new Set([PK, SK, "ch", "p", "x", "bt"]);

/** Every attribute name this package writes; a TTL attribute must be another. */
export const RESERVED_ATTRIBUTES = new Set([
  ...KEPT_WHEN_SPILLED,
  ..."cmv".split("").flatMap((p) => [`${p}t`, `${p}d`, `${p}c`, `${p}r`]),
  "mj",
  "cv",
  "dr",
  "ns",
  "bv",
  "tp",
  "d",
  "n",
  "wc",
  ...MANY_WORKERS_ATTRIBUTES,
]);

const s = (value: string): AttributeValue => ({ S: value });

function valueAttrs(prefix: string, value: SerializedValue): Item {
  const item: Item = { [`${prefix}t`]: s(value.type) };
  if (value.data.byteLength > 0) item[`${prefix}d`] = { B: value.data };
  if (value.chunkRef) item[`${prefix}c`] = s(JSON.stringify(value.chunkRef));
  if (value.refs && value.refs.length > 0) item[`${prefix}r`] = s(JSON.stringify(value.refs));
  return item;
}

function readValue(prefix: string, item: Item): SerializedValue {
  const value: SerializedValue = { type: item[`${prefix}t`]?.S ?? "empty", data: item[`${prefix}d`]?.B ?? new Uint8Array(0) };
  const chunk = item[`${prefix}c`]?.S;
  if (chunk !== undefined) value.chunkRef = JSON.parse(chunk) as ChunkRef;
  const refs = item[`${prefix}r`]?.S;
  if (refs !== undefined) value.refs = JSON.parse(refs) as string[];
  return value;
}

const keys = (threadId: string, sk: string): Item => ({ [PK]: s(threadId), [SK]: s(sk) });

export function checkpointItem(record: CheckpointRecord, extra: Item): Item {
  const item: Item = {
    ...keys(record.threadId, checkpointKey(record.checkpointNs, record.checkpointId)),
    ...valueAttrs("c", record.checkpoint),
    ...valueAttrs("m", record.metadata),
    mj: s(JSON.stringify(record.metadataJson)),
    cv: s(JSON.stringify(record.channelVersions)),
    ...extra,
  };
  if (record.parentCheckpointId !== undefined) item["p"] = s(record.parentCheckpointId);
  if (record.deltaRoots && Object.keys(record.deltaRoots).length > 0) item["dr"] = s(JSON.stringify(record.deltaRoots));
  if (nsIsHashed(record.checkpointNs)) item["ns"] = s(record.checkpointNs);
  return item;
}

/** A checkpoint item (already unspilled) as a record. */
export function readCheckpoint(item: Item): CheckpointRecord {
  const { ns, checkpointId } = parseCheckpointKey(item[SK]!.S!);
  const record: CheckpointRecord = {
    threadId: item[PK]!.S!,
    checkpointNs: ns ?? item["ns"]!.S!,
    checkpointId,
    parentCheckpointId: item["p"]?.S,
    checkpoint: readValue("c", item),
    metadata: readValue("m", item),
    metadataJson: JSON.parse(item["mj"]?.S ?? "{}") as Record<string, unknown>,
    channelVersions: JSON.parse(item["cv"]?.S ?? "{}") as Record<string, string>,
  };
  const roots = item["dr"]?.S;
  if (roots !== undefined) record.deltaRoots = JSON.parse(roots) as Record<string, string>;
  return record;
}

export function blobItem(threadId: string, ns: string, blob: BlobRecord, extra: Item): Item {
  const item: Item = { ...keys(threadId, blobKey(ns, blob.channel, blob.version)), ...valueAttrs("v", blob.value), ...extra };
  if (blob.baseVersion !== undefined) item["bv"] = s(blob.baseVersion);
  return item;
}

export function readBlob(item: Item): BlobRecord {
  const { channel, version } = parseBlobKey(item[SK]!.S!);
  const blob: BlobRecord = { channel, version, value: readValue("v", item) };
  const base = item["bv"]?.S;
  if (base !== undefined) blob.baseVersion = base;
  return blob;
}

/**
 * A write item. `token` is its batch's: a write of a batch of several is visible only once the
 * batch's commit item ({@link writeCommitItem}) exists, so a batch cut short shows none of its writes.
 */
export function writeItem(threadId: string, ns: string, checkpointId: string, write: WriteRecord, extra: Item, token?: string): Item {
  const item: Item = {
    ...keys(threadId, writeKey(ns, checkpointId, write.taskId, write.idx)),
    ch: s(write.channel),
    ...valueAttrs("v", write.value),
    ...extra,
  };
  if (write.taskPath !== "") item["tp"] = s(write.taskPath);
  if (token !== undefined) item["bt"] = s(token);
  return item;
}

/** The item that makes every write of the batch `token` visible at once. */
export function writeCommitItem(threadId: string, ns: string, checkpointId: string, token: string, extra: Item): Item {
  return { ...keys(threadId, writeCommitKey(ns, checkpointId, token)), wc: s(token), ...extra };
}

/**
 * The write items a reader may see among items of write ranges (commit items included): those of no
 * batch, and those whose batch's commit item is among the items. Commit items are dropped.
 */
export function visibleWrites(items: Item[]): Item[] {
  const committed = new Set(items.flatMap((item) => (item["wc"]?.S === undefined ? [] : [item["wc"].S])));
  return items.filter((item) => item["wc"] === undefined && (item["bt"]?.S === undefined || committed.has(item["bt"].S)));
}

/** A write item as a record, with the checkpoint it belongs to. */
export function readWrite(item: Item): WriteRecord & { checkpointId: string } {
  const { checkpointId, taskId, idx } = parseWriteKey(item[SK]!.S!);
  return { checkpointId, taskId, idx, channel: item["ch"]!.S!, value: readValue("v", item), taskPath: item["tp"]?.S ?? "" };
}

/**
 * Chunk items. Index 0 of each hash carries `n`, the number of chunks of that hash in this request,
 * so that a batch get of index 0 says which other indices to fetch (core hands every chunk of a
 * split value to one call).
 */
export function chunkItems(threadId: string, chunks: ChunkRecord[], extra: Item): Item[] {
  const counts = new Map<string, number>();
  for (const chunk of chunks) counts.set(chunk.hash, Math.max(counts.get(chunk.hash) ?? 0, chunk.index + 1));
  const unique = new Map<string, Item>();
  for (const chunk of chunks) {
    const item: Item = { ...keys(threadId, chunkKey(chunk.hash, chunk.index)), d: { B: chunk.data }, ...extra };
    if (chunk.index === 0) item["n"] = { N: String(counts.get(chunk.hash)) };
    // The same hash and index always hold the same bytes; keep one (a batch refuses duplicate keys).
    unique.set(item[SK]!.S!, item);
  }
  return [...unique.values()];
}

export function readChunk(item: Item): ChunkRecord & { count: number | undefined } {
  const { hash, index } = parseChunkKey(item[SK]!.S!);
  const n = item["n"]?.N;
  return { hash, index, data: item["d"]?.B ?? new Uint8Array(0), count: n === undefined ? undefined : Number(n) };
}

/**
 * Fits an item into `limit` bytes: as it is when it fits, else spilled (its attributes other than
 * {@link KEPT_WHEN_SPILLED} and `extra`, encoded, become chunks of `chunkBytes`, written with it).
 * Chunk items cannot spill: one over the limit is refused.
 */
export function fitItem(item: Item, limit: number, chunkBytes: number, extra: Item, spill: Item[], what: () => string): Item {
  const size = itemSize(item);
  if (size <= limit) return item;
  if (item["d"] !== undefined) {
    throw new ValueTooLargeError(what(), size, limit, "A chunk item must fit the store's maxItemBytes; core splits values into chunks of capabilities.maxItemBytes.");
  }
  const kept: Item = {};
  const moved: Item = {};
  for (const [name, value] of Object.entries(item)) {
    if (KEPT_WHEN_SPILLED.has(name) || name in extra) kept[name] = value;
    else moved[name] = value;
  }
  const data = encodeAttributes(moved);
  const hash = createHash("sha256").update(data).digest("hex");
  const count = Math.ceil(data.byteLength / chunkBytes);
  const chunks: ChunkRecord[] = [];
  for (let index = 0; index < count; index += 1) chunks.push({ hash, index, data: data.subarray(index * chunkBytes, (index + 1) * chunkBytes) });
  spill.push(...chunkItems(item[PK]!.S!, chunks, extra));
  const ref: ChunkRef = { hash, count, size: data.byteLength };
  const fitted: Item = { ...kept, x: s(JSON.stringify(ref)) };
  if (itemSize(fitted) > limit) throw new ValueTooLargeError(what(), itemSize(fitted), limit, "Even its keys alone do not fit one item.");
  return fitted;
}

/** The chunk reference of a spilled item, or `undefined`. */
export function spillRef(item: Item): ChunkRef | undefined {
  const x = item["x"]?.S;
  return x === undefined ? undefined : (JSON.parse(x) as ChunkRef);
}

/** Restores a spilled item from its chunks (checked against the reference's size and hash). */
export function unspill(item: Item, chunks: ChunkRecord[]): Item {
  const ref = spillRef(item);
  if (!ref) return item;
  const { data } = joinChunks({ type: "spill", data: new Uint8Array(0), chunkRef: ref }, chunks, `item ${JSON.stringify(item[SK]?.S)}`);
  const { x: _x, ...kept } = item;
  return { ...kept, ...decodeAttributes(data) };
}

const TYPES = ["S", "B", "N"] as const;

/** `[u16 name length][name][u8 type][u32 length][value]` per attribute. */
function encodeAttributes(item: Item): Uint8Array {
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(item)) {
    const type = TYPES.findIndex((t) => value[t] !== undefined);
    const bytes = type === 1 ? Buffer.from(value.B!) : Buffer.from((value.S ?? value.N)!, "utf8");
    const nameBytes = Buffer.from(name, "utf8");
    const head = Buffer.alloc(7);
    head.writeUInt16BE(nameBytes.byteLength, 0);
    head.writeUInt8(type, 2);
    head.writeUInt32BE(bytes.byteLength, 3);
    parts.push(head.subarray(0, 2), nameBytes, head.subarray(2), bytes);
  }
  return new Uint8Array(Buffer.concat(parts));
}

function decodeAttributes(data: Uint8Array): Item {
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const item: Item = {};
  let at = 0;
  while (at < buffer.byteLength) {
    const nameLength = buffer.readUInt16BE(at);
    const name = buffer.toString("utf8", at + 2, at + 2 + nameLength);
    at += 2 + nameLength;
    const type = TYPES[buffer.readUInt8(at)];
    const length = buffer.readUInt32BE(at + 1);
    const bytes = buffer.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    item[name] = type === "B" ? { B: new Uint8Array(bytes) } : type === "N" ? { N: bytes.toString("utf8") } : { S: bytes.toString("utf8") };
  }
  return item;
}
