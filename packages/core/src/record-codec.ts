/**
 * Turning values into the records a store keeps, and back: serialization with shared pieces and
 * item-size chunks on the way in; on the way out, one fetch for every chunk and piece a set of
 * records needs, and delta chains folded back into whole lists.
 *
 * @module
 */
import { DeltaSnapshot, isDeltaSnapshot, type SerializerProtocol } from "@langchain/langgraph-checkpoint";

import { CorruptRecordError, ValueTooLargeError } from "./errors.js";
import { dumpsJsonPlusParts, joinPieces } from "./json-plus.js";
import { deserializeValue, isDefaultSerde, joinChunks, serializeDefault, serializeValue, splitIfLarge } from "./serialization.js";
import type { BlobRecord, CheckpointStore, ChunkRecord, SerializedValue, ThreadScope } from "./store.js";

/** How values are written: limits and whether large parts become shared pieces. */
export interface WriteSettings {
  serde: SerializerProtocol;
  /** Refuse any value larger than this (the saver's `maxValueBytes`). */
  maxValueBytes: number;
  /** The store's item limit: larger values are split into chunks. */
  maxItemBytes: number;
  /** Smallest shared piece in bytes, or `undefined` when the store does not keep references. */
  pieceMinBytes: number | undefined;
}

/**
 * Serializes the values of one store request, collecting the chunks and pieces they need, each once.
 */
export class RecordWriter {
  readonly chunks: ChunkRecord[] = [];
  private readonly pieceHashes = new Set<string>();

  /** Whether the serializer is LangGraph's default, which core writes itself: {@link valueNow} serves. */
  readonly synchronous: boolean;

  constructor(private readonly settings: WriteSettings) {
    this.synchronous = isDefaultSerde(settings.serde);
  }

  /**
   * One value, ready for a record. `pieces`: whether its large elements and strings may be stored
   * apart (channel values and writes; not the checkpoint or its metadata).
   */
  async value(value: unknown, target: string, pieces: boolean): Promise<SerializedValue> {
    if (this.synchronous) return this.valueNow(value, target, pieces);
    const { serde, maxValueBytes, maxItemBytes } = this.settings;
    return splitIfLarge(await serializeValue(serde, value, target, maxValueBytes), maxItemBytes, this.chunks);
  }

  /**
   * {@link value} without a promise, when {@link synchronous} (the saver's hot path awaits nothing
   * it does not have to: each await costs a turn of the microtask queue).
   */
  valueNow(value: unknown, target: string, pieces: boolean): SerializedValue {
    const { maxValueBytes, maxItemBytes, pieceMinBytes } = this.settings;
    if (!this.synchronous) throw new Error("RecordWriter.valueNow(): the serializer is not the default one; use value()");
    let serialized: SerializedValue;
    if (pieces && pieceMinBytes !== undefined && !(value instanceof Uint8Array)) {
      const parts = dumpsJsonPlusParts(value, target, { minBytes: pieceMinBytes, maxBytes: maxItemBytes });
      let size = parts.data.byteLength;
      for (const hash of parts.refs) size += parts.pieces.get(hash)!.byteLength;
      if (size > maxValueBytes) {
        throw new ValueTooLargeError(
          target,
          size,
          maxValueBytes,
          "Raise the saver's `maxValueBytes`, or keep large payloads out of graph state (store them elsewhere and keep a reference).",
        );
      }
      serialized = { type: "json", data: parts.data };
      if (parts.refs.length > 0) {
        serialized.refs = parts.refs;
        for (const [hash, data] of parts.pieces) {
          if (this.pieceHashes.has(hash)) continue;
          this.pieceHashes.add(hash);
          this.chunks.push({ hash, index: 0, data });
        }
      }
    } else {
      serialized = serializeDefault(value, target, maxValueBytes);
    }
    return splitIfLarge(serialized, maxItemBytes, this.chunks);
  }
}

/** A list value, or the list inside a `DeltaChannel` snapshot; `undefined` for anything else. */
export function listOf(value: unknown): readonly unknown[] | undefined {
  if (Array.isArray(value)) return value;
  if (isDeltaSnapshot(value) && Array.isArray((value as { value: unknown }).value)) return (value as { value: unknown[] }).value;
  return undefined;
}

/** The delta of `value` over a base holding its first `baseLength` elements, in the value's own form. */
export function deltaOf(value: unknown, list: readonly unknown[], baseLength: number): unknown {
  const added = list.slice(baseLength);
  return isDeltaSnapshot(value) ? new DeltaSnapshot(added) : added;
}

/** A blob read back: its value, and how many deltas the chain below it held. */
export interface ResolvedBlob {
  value: unknown;
  depth: number;
  /** The version of the whole value the chain starts from. */
  root: string;
}

/**
 * Reads the values of records of one thread and namespace. Every chunk and piece the values need is
 * fetched with one `getChunks` for whatever the store did not return with the records.
 */
export class RecordReader {
  private readonly chunks = new Map<string, ChunkRecord[]>();

  constructor(
    private readonly store: CheckpointStore,
    private readonly serde: SerializerProtocol,
    private readonly scope: ThreadScope,
    provided: readonly ChunkRecord[] | undefined,
  ) {
    for (const chunk of provided ?? []) this.addChunk(chunk);
  }

  /** Fetches, in one call, the chunks and pieces of these values that are not at hand yet. */
  async prefetch(values: Iterable<SerializedValue>): Promise<void> {
    const missing = new Set<string>();
    for (const value of values) {
      if (value.chunkRef && !this.chunks.has(value.chunkRef.hash)) missing.add(value.chunkRef.hash);
      for (const hash of value.refs ?? []) if (!this.chunks.has(hash)) missing.add(hash);
    }
    if (missing.size === 0) return;
    for (const chunk of await this.store.getChunks(this.scope.threadId, [...missing])) this.addChunk(chunk);
  }

  /** Deserializes one value: chunks joined, pieces put back. */
  async load(value: SerializedValue, target: string): Promise<unknown> {
    await this.prefetch([value]);
    let whole = value;
    if (value.chunkRef) whole = joinChunks(value, this.chunks.get(value.chunkRef.hash) ?? [], target);
    if (value.refs && value.refs.length > 0) {
      const pieces = new Map<string, Uint8Array>();
      for (const hash of value.refs) {
        const piece = this.chunks.get(hash)?.find((c) => c.index === 0);
        if (piece) pieces.set(hash, piece.data);
      }
      whole = { type: whole.type, data: joinPieces(whole.data, value.refs, pieces, target) };
    }
    return deserializeValue(this.serde, whole, target);
  }

  /**
   * A channel blob's value. A delta blob holds the elements appended to its base: the chain is
   * followed through `blobs` (the store returns each chain's range with the checkpoint), fetching any
   * link that is missing, and folded back into the whole list.
   */
  async blob(blob: BlobRecord, blobs: Map<string, BlobRecord>): Promise<ResolvedBlob> {
    const target = `channel "${blob.channel}" at version ${blob.version}`;
    const chain: BlobRecord[] = [blob];
    const seen = new Set([blob.version]);
    for (let base = blob.baseVersion; base !== undefined; ) {
      if (seen.has(base)) throw new CorruptRecordError(`${target} has a delta chain that loops at version ${base}`);
      seen.add(base);
      let found = blobs.get(blobKey(blob.channel, base));
      if (!found) {
        [found] = await this.store.getBlobs(this.scope, [{ channel: blob.channel, version: base }]);
        if (!found) throw new CorruptRecordError(`${target} is a delta over version ${base}, which is missing`);
        blobs.set(blobKey(blob.channel, base), found);
      }
      chain.push(found);
      base = found.baseVersion;
    }
    await this.prefetch(chain.map((b) => b.value));
    const root = chain[chain.length - 1]!;
    let value = await this.load(root.value, target);
    if (chain.length > 1) {
      // Folded into one list, in place: linear in the elements, whatever the length of the chain.
      const base = listOf(value);
      if (!base) throw new CorruptRecordError(`${target} is a delta, but its base is not a list`);
      const elements = base.slice();
      let last: unknown = value;
      for (let i = chain.length - 2; i >= 0; i -= 1) {
        const delta = await this.load(chain[i]!.value, target);
        const added = listOf(delta);
        if (!added) throw new CorruptRecordError(`${target} is a delta, but its delta is not a list`);
        for (const element of added) elements.push(element);
        last = delta;
      }
      value = isDeltaSnapshot(last) ? new DeltaSnapshot(elements) : elements;
    }
    return { value, depth: chain.length - 1, root: root.version };
  }

  private addChunk(chunk: ChunkRecord): void {
    const list = this.chunks.get(chunk.hash);
    if (!list) this.chunks.set(chunk.hash, [chunk]);
    else if (!list.some((c) => c.index === chunk.index)) list.push(chunk);
  }
}

/** The key of a blob in a map of blobs of one namespace. */
export function blobKey(channel: string, version: string): string {
  return `${channel}\u0000${version}`;
}
