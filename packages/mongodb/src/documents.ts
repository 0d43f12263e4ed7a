/**
 * How records become MongoDB documents and back.
 *
 * Channel names, channel versions and metadata keys are arbitrary strings, and FerretDB refuses field
 * names that contain `.` or start with `$` (MongoDB accepts them but cannot query them safely), so no
 * user string is ever a field name: versions and metadata are kept as JSON text, and metadata filters
 * compare hashes of `[key, value]` pairs (see {@link metadataKeys}).
 *
 * @module
 */
import { createHash } from "node:crypto";

import { canonicalJsonText, type BlobRecord, type ChunkRecord, type ChunkRef, type CheckpointRecord, type SerializedValue, type WriteRecord } from "@resumable/core";

/** A serialized value as stored: its type tag, its bytes, where its chunks are and the pieces it references. */
export interface ValueDoc {
  type: string;
  data: unknown;
  chunk?: ChunkRef;
  refs?: string[];
}

export interface CheckpointDoc {
  /** {@link keyId} of `[thread_id, checkpoint_ns, checkpoint_id]`. */
  _id: string;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint: ValueDoc;
  metadata: ValueDoc;
  /** The exact metadata JSON (`CheckpointRecord.metadataJson`). */
  metadata_json: string;
  /** One hash per top-level metadata key and its value, for native filters (multikey index). */
  metadata_kv: string[];
  /** `CheckpointRecord.channelVersions` as JSON text. */
  channel_versions: string;
  /** `CheckpointRecord.deltaRoots` as JSON text, or null. */
  delta_roots: string | null;
  /** Written by a fenced call (`manyWorkers`): absent to readers until `tag.op` is committed. */
  tag?: { token: number; op: string };
}

export interface BlobDoc {
  /** {@link keyId} of `[thread_id, checkpoint_ns, channel, version]`. */
  _id: string;
  thread_id: string;
  checkpoint_ns: string;
  channel: string;
  version: string;
  base_version?: string;
  value: ValueDoc;
}

export interface WriteDoc {
  /** {@link keyId} of `[thread_id, checkpoint_ns, checkpoint_id, task_id, idx]`. */
  _id: string;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  idx: number;
  channel: string;
  task_path: string;
  value: ValueDoc;
  /**
   * A fenced call's value (`manyWorkers`), beside the one readers see now (absent for a new key): it
   * replaces it for readers once `next.op` is committed, and is moved into place after the commit.
   */
  next?: PendingWrite;
}

/** The fields of a write a fenced call stores under {@link WriteDoc.next}. */
export interface PendingWrite {
  op: string;
  token: number;
  channel: string;
  task_path: string;
  value: ValueDoc;
}

export interface ChunkDoc {
  /** {@link keyId} of `[thread_id, hash, idx]`. */
  _id: string;
  thread_id: string;
  hash: string;
  idx: number;
  data: unknown;
}

/**
 * The `_id` of a record: a hash of its key fields. Keys by `_id` are what FerretDB answers without
 * decoding every document of a collection, and a fixed-size `_id` fits every server's index entry
 * whatever the ids hold (up to 512-byte thread ids, quotes and all). The key fields stay in the
 * document, under the unique indexes the queries use.
 */
export function keyId(parts: Array<string | number>): string {
  return createHash("sha256").update(JSON.stringify(parts)).digest("base64url");
}

export function toValueDoc(value: SerializedValue): ValueDoc {
  const doc: ValueDoc = { type: value.type, data: value.data };
  if (value.chunkRef) doc.chunk = { hash: value.chunkRef.hash, count: value.chunkRef.count, size: value.chunkRef.size };
  if (value.refs && value.refs.length > 0) doc.refs = [...value.refs];
  return doc;
}

export function fromValueDoc(doc: ValueDoc): SerializedValue {
  const value: SerializedValue = { type: doc.type, data: bytes(doc.data) };
  if (doc.chunk) value.chunkRef = { hash: doc.chunk.hash, count: doc.chunk.count, size: doc.chunk.size };
  if (doc.refs) value.refs = [...doc.refs];
  return value;
}

/**
 * The bytes of a BSON binary as a plain `Uint8Array` (the driver returns a `Binary`, or a `Buffer` with
 * `promoteBuffers`), so callers comparing bytes see the type they stored.
 */
export function bytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const binary = data as { buffer?: unknown; position?: number } | null;
  if (binary && binary.buffer instanceof Uint8Array) {
    const buffer = binary.buffer;
    return new Uint8Array(buffer.buffer, buffer.byteOffset, binary.position ?? buffer.byteLength);
  }
  return new Uint8Array(0);
}

/** Bytes a value takes inline in its document. */
export function inlineBytes(value: SerializedValue): number {
  return value.data.byteLength + (value.refs?.length ?? 0) * 80;
}

/**
 * The hash a metadata key and its value index under: `[key, canonical JSON of the value]`, so that a
 * filter value matches only an equal value, whatever it looks like (`{"$gt": ""}` is a value like any other).
 */
export function metadataKey(key: string, value: unknown): string {
  return createHash("sha256").update(JSON.stringify([key, canonicalJsonText(value) ?? null])).digest("base64url").slice(0, 24);
}

/** The {@link metadataKey} of every top-level key of a metadata object. */
export function metadataKeys(metadata: Record<string, unknown>): string[] {
  return Object.keys(metadata).map((key) => metadataKey(key, metadata[key]));
}

export function toCheckpointDoc(record: CheckpointRecord): CheckpointDoc {
  return {
    _id: keyId([record.threadId, record.checkpointNs, record.checkpointId]),
    thread_id: record.threadId,
    checkpoint_ns: record.checkpointNs,
    checkpoint_id: record.checkpointId,
    parent_checkpoint_id: record.parentCheckpointId ?? null,
    checkpoint: toValueDoc(record.checkpoint),
    metadata: toValueDoc(record.metadata),
    // JSON.stringify escapes lone surrogates, so the text is valid UTF-8 and comes back exactly.
    metadata_json: JSON.stringify(record.metadataJson),
    metadata_kv: metadataKeys(record.metadataJson),
    channel_versions: JSON.stringify(record.channelVersions),
    delta_roots: record.deltaRoots ? JSON.stringify(record.deltaRoots) : null,
  };
}

export function fromCheckpointDoc(doc: CheckpointDoc): CheckpointRecord {
  const record: CheckpointRecord = {
    threadId: doc.thread_id,
    checkpointNs: doc.checkpoint_ns,
    checkpointId: doc.checkpoint_id,
    parentCheckpointId: doc.parent_checkpoint_id ?? undefined,
    checkpoint: fromValueDoc(doc.checkpoint),
    metadata: fromValueDoc(doc.metadata),
    metadataJson: JSON.parse(doc.metadata_json) as Record<string, unknown>,
    channelVersions: versionsOf(doc),
  };
  const roots = rootsOf(doc);
  if (roots) record.deltaRoots = roots;
  return record;
}

export function versionsOf(doc: Pick<CheckpointDoc, "channel_versions">): Record<string, string> {
  return JSON.parse(doc.channel_versions) as Record<string, string>;
}

export function rootsOf(doc: Pick<CheckpointDoc, "delta_roots">): Record<string, string> | undefined {
  return doc.delta_roots ? (JSON.parse(doc.delta_roots) as Record<string, string>) : undefined;
}

export function toBlobDoc(threadId: string, checkpointNs: string, blob: BlobRecord): BlobDoc {
  const doc: BlobDoc = {
    _id: keyId([threadId, checkpointNs, blob.channel, blob.version]),
    thread_id: threadId,
    checkpoint_ns: checkpointNs,
    channel: blob.channel,
    version: blob.version,
    value: toValueDoc(blob.value),
  };
  if (blob.baseVersion !== undefined) doc.base_version = blob.baseVersion;
  return doc;
}

export function fromBlobDoc(doc: BlobDoc): BlobRecord {
  const blob: BlobRecord = { channel: doc.channel, version: doc.version, value: fromValueDoc(doc.value) };
  if (typeof doc.base_version === "string") blob.baseVersion = doc.base_version;
  return blob;
}

export function toWriteDoc(threadId: string, checkpointNs: string, checkpointId: string, write: WriteRecord): WriteDoc {
  return {
    _id: keyId([threadId, checkpointNs, checkpointId, write.taskId, write.idx]),
    thread_id: threadId,
    checkpoint_ns: checkpointNs,
    checkpoint_id: checkpointId,
    task_id: write.taskId,
    idx: write.idx,
    channel: write.channel,
    task_path: write.taskPath,
    value: toValueDoc(write.value),
  };
}

export function fromWriteDoc(doc: WriteDoc): WriteRecord {
  return { taskId: doc.task_id, idx: doc.idx, channel: doc.channel, value: fromValueDoc(doc.value), taskPath: doc.task_path ?? "" };
}

export function toChunkDoc(threadId: string, chunk: ChunkRecord): ChunkDoc {
  return { _id: keyId([threadId, chunk.hash, chunk.index]), thread_id: threadId, hash: chunk.hash, idx: chunk.index, data: chunk.data };
}

export function fromChunkDoc(doc: ChunkDoc): ChunkRecord {
  return { hash: doc.hash, index: doc.idx, data: bytes(doc.data) };
}
