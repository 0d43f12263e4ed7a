/**
 * Retention (`capabilities.retention`): a thread's documents as the keys core plans a prune with, and
 * the filters that remove some of them.
 *
 * Every query is an equality on `thread_id` (the leading field of each collection's unique index,
 * pushed down to the database by FerretDB's PostgreSQL handler); the keys to remove are matched within
 * the thread. FerretDB evaluates `$in` and `$or` in Go over what the database returned, so they are
 * always under that equality, never alone over a collection.
 *
 * @module
 */
import type { BlobKey, ChunkKey, DeleteRecordsRequest, WriteKey } from "@resumable/core";
import type { Document, FindCursor } from "mongodb";

import { bytes, keyId, type BlobDoc, type ChunkDoc, type ValueDoc, type WriteDoc } from "./documents.js";

/**
 * Removals per request: an `$in` of this many 43-character ids is about 0.5 MB, far below the 16 MB
 * of a command, and each request matches within the thread's documents.
 */
export const REMOVALS_PER_REQUEST = 10_000;

/**
 * Reads a cursor to its end, keeping only what `map` takes of each document: a value's bytes are
 * counted and dropped as they arrive (FerretDB has no `$binarySize` to count them in the server).
 */
export async function mapAll<T, U>(cursor: FindCursor<T>, map: (doc: T) => U): Promise<U[]> {
  const out: U[] = [];
  for await (const doc of cursor) out.push(map(doc));
  return out;
}

/** What a value references and how many bytes it holds inline. */
interface ValueKey {
  bytes: number;
  refs?: string[];
  chunkHash?: string;
}

function valueKey(value: ValueDoc | undefined): ValueKey {
  if (!value) return { bytes: 0 };
  return {
    bytes: bytes(value.data).byteLength,
    ...(value.refs && value.refs.length > 0 ? { refs: [...value.refs] } : {}),
    ...(value.chunk ? { chunkHash: value.chunk.hash } : {}),
  };
}

export function blobKeyOf(doc: BlobDoc): BlobKey {
  return {
    checkpointNs: doc.checkpoint_ns,
    channel: doc.channel,
    version: doc.version,
    empty: doc.value?.type === "empty",
    ...(typeof doc.base_version === "string" ? { baseVersion: doc.base_version } : {}),
    ...valueKey(doc.value),
  };
}

export function chunkKeyOf(doc: ChunkDoc): ChunkKey {
  return { hash: doc.hash, index: doc.idx, bytes: bytes(doc.data).byteLength };
}

/** A write document without its bytes: enough to list it once its pending value is resolved. */
export interface WriteHead {
  checkpointNs: string;
  checkpointId: string;
  taskId: string;
  idx: number;
  channel: string;
  /** The value readers see now (absent for a key only a fenced call wrote). */
  value?: ValueKey;
  /** A fenced call's value (`manyWorkers`), readers' once `op` is committed. */
  next?: { op: string; channel: string; value: ValueKey };
}

export function writeHeadOf(doc: WriteDoc): WriteHead {
  const head: WriteHead = { checkpointNs: doc.checkpoint_ns, checkpointId: doc.checkpoint_id, taskId: doc.task_id, idx: doc.idx, channel: doc.channel };
  if (doc.value !== undefined) head.value = valueKey(doc.value);
  if (doc.next) head.next = { op: doc.next.op, channel: doc.next.channel, value: valueKey(doc.next.value) };
  return head;
}

/**
 * A write as core lists it: the channel and bytes of the value readers see (the pending one once
 * committed, or when there is no other), and the references of both values, so that a kept write keeps
 * whatever it may yet show (a pending value that commits later still finds its pieces).
 */
export function writeKeyOf(head: WriteHead, committed: boolean): WriteKey {
  const seen = head.next && (committed || head.value === undefined) ? head.next : { channel: head.channel, value: head.value ?? { bytes: 0 } };
  const chunkHash = seen.value.chunkHash;
  // Core keeps what `refs` and `chunkHash` name alike: the other value's chunks go with its pieces.
  const hashes = [head.value, head.next?.value].flatMap((v) => [...(v?.refs ?? []), ...(v?.chunkHash !== undefined ? [v.chunkHash] : [])]);
  const refs = [...new Set(hashes)].filter((h) => h !== chunkHash);
  const key: WriteKey = { checkpointNs: head.checkpointNs, checkpointId: head.checkpointId, taskId: head.taskId, idx: head.idx, channel: seen.channel, bytes: seen.value.bytes };
  if (refs.length > 0) key.refs = refs;
  if (chunkHash !== undefined) key.chunkHash = chunkHash;
  return key;
}

/** The removal filters of a request, in the order a removal without transactions must run them. */
export interface RemovalFilters {
  checkpoints: Document[];
  writes: Document[];
  blobs: Document[];
  chunks: Document[];
}

/**
 * The filters that remove what `request` lists, each under `thread_id`: checkpoint documents and blobs
 * by `_id` (hashes of their keys), writes by `(checkpoint_ns, checkpoint_id)` (every write of a removed
 * checkpoint, whatever its task), chunks by hash (every index). `garbage`: checkpoint documents of
 * fenced puts never committed, removed only while they still carry that put's tag.
 */
export function removalFilters(request: DeleteRecordsRequest, garbage: Array<{ _id: string; op: string }> = []): RemovalFilters {
  const thread = request.threadId;
  const out: RemovalFilters = { checkpoints: [], writes: [], blobs: [], chunks: [] };
  const anyOf = (conditions: Document[]): Document => (conditions.length === 1 ? { thread_id: thread, ...conditions[0] } : { thread_id: thread, $or: conditions });
  for (const part of batches(request.checkpoints)) {
    out.checkpoints.push({ thread_id: thread, _id: { $in: part.map((c) => keyId([thread, c.checkpointNs, c.checkpointId])) } });
    const byNs = new Map<string, string[]>();
    for (const c of part) {
      const ids = byNs.get(c.checkpointNs) ?? [];
      byNs.set(c.checkpointNs, ids);
      ids.push(c.checkpointId);
    }
    out.writes.push(anyOf([...byNs].map(([ns, ids]) => ({ checkpoint_ns: ns, checkpoint_id: { $in: ids } }))));
  }
  for (const part of batches(garbage)) out.checkpoints.push(anyOf(part.map((g) => ({ _id: g._id, "tag.op": g.op }))));
  for (const part of batches(request.blobs)) out.blobs.push({ thread_id: thread, _id: { $in: part.map((b) => keyId([thread, b.checkpointNs, b.channel, b.version])) } });
  for (const part of batches([...new Set(request.chunks)])) out.chunks.push({ thread_id: thread, hash: { $in: part } });
  return out;
}

function batches<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += REMOVALS_PER_REQUEST) out.push(items.slice(i, i + REMOVALS_PER_REQUEST));
  return out;
}
