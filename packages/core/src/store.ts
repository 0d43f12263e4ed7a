/**
 * The storage contract a backend implements.
 *
 * A store holds *already serialized* records and knows nothing of LangGraph's types: the saver in
 * {@link ResumableSaver} owns serialization, channel versions, the write rules, ordering and errors.
 * The contract is shaped so that it fits SQL databases (one transaction), Redis (MULTI/EXEC or a
 * script), MongoDB and DynamoDB (no multi-item transaction: write dependents first, the record that
 * makes them visible last) and stores with an item-size limit (core splits large values into chunks).
 *
 * @module
 */

/** A serialized value: the serializer's type tag and its bytes. */
export interface SerializedValue {
  /** The type tag returned by the serializer's `dumpsTyped` (`"json"`, `"bytes"`, `"empty"`...). */
  type: string;
  /**
   * The serialized bytes. When the value was split because it exceeded the store's
   * {@link StoreCapabilities.maxItemBytes}, this is empty and {@link chunkRef} names the chunks.
   * When {@link refs} is set, each `0x00` byte marks where one shared piece goes back in.
   */
  data: Uint8Array;
  /** Present when the bytes live in {@link ChunkRecord}s rather than inline. */
  chunkRef?: ChunkRef;
  /**
   * Content hashes of the shared pieces this value is made of, in order, one per `0x00` byte of
   * {@link data}. A piece (a large message, a long string) that reaches the saver several times (as
   * an input, a write, a channel value) is stored once per thread, as a {@link ChunkRecord} with
   * index 0 keyed by its hash, and referenced from every value that holds it. Stores keep the list
   * as data beside the value and return it unchanged; a store that can fetch the referenced pieces
   * in the same query returns them in {@link StoredCheckpoint.chunks}.
   */
  refs?: string[];
}

/** Where the bytes of a split value live: content-addressed chunks of one thread. */
export interface ChunkRef {
  /** Hex SHA-256 of the whole value; chunks are keyed by it, so rewriting them is idempotent. */
  hash: string;
  /** Number of chunks, indexed `0..count-1`. */
  count: number;
  /** Total size in bytes, checked when the value is reassembled. */
  size: number;
}

/**
 * Content-addressed bytes of one thread, keyed by `(threadId, hash, index)`: a piece of a value that
 * was too large for one item ({@link ChunkRef}), or a shared piece that values reference through
 * {@link SerializedValue.refs} (index 0). Insert-or-ignore: the same key always holds the same bytes.
 */
export interface ChunkRecord {
  hash: string;
  index: number;
  data: Uint8Array;
}

/** Identifies one namespace of one thread. */
export interface ThreadScope {
  threadId: string;
  /** Checkpoint namespace; `""` for the root graph. */
  checkpointNs: string;
}

/** A checkpoint row: the checkpoint without its channel values, plus what a store may index. */
export interface CheckpointRecord extends ThreadScope {
  checkpointId: string;
  parentCheckpointId: string | undefined;
  /**
   * The serialized checkpoint with `channel_values` emptied: values live in {@link BlobRecord}s,
   * keyed by `(channel, version)`.
   */
  checkpoint: SerializedValue;
  /** The serialized metadata, exactly as LangGraph gave it (round-trips every type). */
  metadata: SerializedValue;
  /**
   * The metadata as plain JSON, for stores that filter natively. Keys are sorted at every level, so a
   * store may compare the text of a nested value directly.
   */
  metadataJson: Record<string, unknown>;
  /**
   * The checkpoint's channel versions, as strings, so that a store can fetch the blobs a checkpoint
   * needs (and the nearest seed of a delta channel) without deserializing anything.
   */
  channelVersions: Record<string, string>;
  /**
   * For each channel whose blob at {@link channelVersions} is a delta ({@link BlobRecord.baseVersion}),
   * the version of the whole value its chain of deltas starts from. Reading the checkpoint needs
   * every blob of that channel with `deltaRoots[channel] <= version <= channelVersions[channel]`
   * (strings compared by code point): the chain is among them, and core follows its base links.
   * Absent when no channel of this checkpoint is a delta.
   */
  deltaRoots?: Record<string, string>;
}

/**
 * A channel value at one version. Written only for channels named in `newVersions`; a channel whose
 * version did not change is carried over by its version.
 */
export interface BlobRecord {
  channel: string;
  /** `String(version)`. */
  version: string;
  /**
   * The value. `type: "empty"` marks a channel that has a version but no stored value (an empty
   * channel, or a `DeltaChannel` between snapshots); such a blob never seeds a delta history.
   */
  value: SerializedValue;
  /**
   * When set, {@link value} is a delta to be applied on top of the value of the same channel at this
   * earlier version, not the whole value. Stores keep it as data; core resolves the chain.
   */
  baseVersion?: string;
}

/** A pending write of one task, on one checkpoint. Unique per `(taskId, idx)`. */
export interface WriteRecord {
  taskId: string;
  /** Position in the task's batch, or the fixed negative index of a special channel. */
  idx: number;
  channel: string;
  value: SerializedValue;
  /** The task's path as LangGraph serializes it (`""` when unknown); part of the sort order. */
  taskPath: string;
}

/** Everything `getCheckpoint` returns for one checkpoint. */
export interface StoredCheckpoint {
  record: CheckpointRecord;
  /**
   * The blobs for the `(channel, version)` pairs of `record.channelVersions` that exist, and, for each
   * channel of `record.deltaRoots`, every blob of that channel in the range `[root, version]`
   * (see {@link CheckpointRecord.deltaRoots}). Extra blobs are harmless; missing ones cost core an
   * extra {@link CheckpointStore.getBlobs} call per link of the chain.
   */
  blobs: BlobRecord[];
  /** The checkpoint's pending writes, in any order (core sorts them). */
  writes: WriteRecord[];
  /**
   * Optional: chunks and shared pieces referenced by the blobs and writes above (through
   * {@link SerializedValue.refs} or {@link SerializedValue.chunkRef}), when the store could fetch them
   * in the same round trip. Core fetches whatever is missing with one {@link CheckpointStore.getChunks}.
   */
  chunks?: ChunkRecord[];
}

/** What `putCheckpoint` stores: visible all at once, or not at all. */
export interface PutCheckpointRequest {
  record: CheckpointRecord;
  /** Blobs of the channels in `newVersions`; insert-or-ignore by `(channel, version)`. */
  blobs: BlobRecord[];
  /** Chunks referenced by the record or its blobs; insert-or-ignore. */
  chunks: ChunkRecord[];
}

/** What `putWrites` stores, for one task on one checkpoint. */
export interface PutWritesRequest extends ThreadScope {
  checkpointId: string;
  writes: WriteRecord[];
  /** Chunks referenced by the writes; insert-or-ignore, and stored before the writes. */
  chunks: ChunkRecord[];
  /**
   * `"upsert"`: replace an existing `(taskId, idx)` (a batch of only special channels, so that an
   * INTERRUPT can become a RESUME). `"ignore"`: keep the first write of a `(taskId, idx)`, so a
   * retried task never changes what was recorded.
   */
  mode: "upsert" | "ignore";
}

/** Options of `listCheckpoints`. Every field is optional; absent means "any". */
export interface ListCheckpointsQuery {
  threadId?: string;
  checkpointNs?: string;
  /** Only this checkpoint id. */
  checkpointId?: string;
  /** Only checkpoints with an id strictly smaller than this one. */
  before?: string;
  /** Stop after this many records. Only passed when the filter (if any) is applied natively. */
  limit?: number;
  /**
   * Metadata filter: every key's value must deep-equal the filter's. Only passed to stores that
   * declare {@link StoreCapabilities.nativeMetadataFilter}; core re-checks every record anyway.
   */
  filter?: Record<string, unknown>;
}

/** Options of `getHistory`: the ancestors a set of delta channels need. */
export interface HistoryQuery extends ThreadScope {
  /** The target checkpoint; its own writes are not part of the history. */
  checkpointId: string;
  /** Channels to collect writes and seeds for. Never empty. */
  channels: string[];
}

/** One ancestor on the parent chain of a history query. */
export interface HistoryAncestor {
  checkpointId: string;
  parentCheckpointId: string | undefined;
  channelVersions: Record<string, string>;
  /** The ancestor's {@link CheckpointRecord.deltaRoots}, when it has any. */
  deltaRoots?: Record<string, string>;
  /**
   * This ancestor's blobs for the requested channels at the versions it references (seeds), and for a
   * requested channel in {@link deltaRoots}, every blob of its range, as for a checkpoint.
   */
  blobs: BlobRecord[];
  /** This ancestor's writes on the requested channels, in any order. */
  writes: WriteRecord[];
}

/** Result of `getHistory`: ancestors from the target's parent back towards the root. */
export interface HistoryResult {
  /**
   * Ancestors, nearest first. A store may stop at the ancestor where every requested channel has a
   * non-`"empty"` blob (its seed), and may return more ancestors than needed: core walks the parent
   * links and stops per channel.
   */
  ancestors: HistoryAncestor[];
  /** Optional: chunks and pieces the returned blobs and writes reference (see {@link StoredCheckpoint.chunks}). */
  chunks?: ChunkRecord[];
}

/** One database command, reported to an instrumentation listener (crash injection, counting). */
export interface StoreCommandEvent {
  /** A short name of the command (`"INSERT checkpoints"`, `"BEGIN"`, `"COMMIT"`...). */
  command: string;
}

/**
 * Called after every database command a store issues. It may throw or kill the process: the crash
 * suite uses it to stop a process after its k-th command.
 */
export type StoreCommandListener = (event: StoreCommandEvent) => void;

/** What a store can and cannot do. Every flag has a safe default, so adding one breaks no store. */
export interface StoreCapabilities {
  /**
   * The largest value, in bytes, one record can hold. Core splits larger values into chunks of at
   * most this size. `Infinity` (the default) means no limit.
   */
  maxItemBytes: number;
  /** The store evaluates `ListCheckpointsQuery.filter` itself (default `false`: core filters). */
  nativeMetadataFilter: boolean;
  /**
   * The data outlives the process (default `true`). A store without it (an in-memory one) is "not
   * applicable" to the crash-injection suite.
   */
  persistent: boolean;
  /**
   * The store reports each database command to {@link CheckpointStore.instrument} (default `false`:
   * the crash suite then counts store calls instead of commands).
   */
  commandEvents: boolean;
  /**
   * The store keeps {@link SerializedValue.refs} of blobs and writes (default `false`). Only then does
   * core store a large message or string once per thread and reference it from every value that
   * holds it; without it, every value is stored whole.
   */
  valueRefs: boolean;
  /**
   * The store returns, with a checkpoint (`getCheckpoint`, `listCheckpoints`, `getHistory`), every
   * blob of each delta channel's range (see {@link CheckpointRecord.deltaRoots}) (default `false`).
   * Only then does core store list channels as deltas: without the ranges, reading a long chain
   * would cost one call per link.
   */
  deltaRanges: boolean;
}

/** Defaults for every capability a store does not declare. */
export const DEFAULT_CAPABILITIES: StoreCapabilities = Object.freeze({
  maxItemBytes: Number.POSITIVE_INFINITY,
  nativeMetadataFilter: false,
  persistent: true,
  commandEvents: false,
  valueRefs: false,
  deltaRanges: false,
});

/**
 * The contract a backend implements. Records arrive serialized; ids are opaque strings that a store
 * must treat as data (never interpolated into a query, a key pattern or a filter expression).
 *
 * @example A store is handed to the saver, which implements LangGraph's API on top of it:
 * ```ts
 * const saver = new ResumableSaver(new MemoryStore());
 * const graph = builder.compile({ checkpointer: saver });
 * ```
 */
export interface CheckpointStore {
  /** What this store can do; missing flags take {@link DEFAULT_CAPABILITIES}. */
  readonly capabilities?: Partial<StoreCapabilities>;

  /** Creates tables, indexes or key layouts. Idempotent; safe to call from several processes. */
  setup(): Promise<void>;

  /**
   * Stores a checkpoint with its new blobs and chunks, atomically: a reader sees the checkpoint with
   * every blob and chunk it references, or does not see it. Blobs and chunks are insert-or-ignore;
   * the checkpoint record is an upsert (putting the same id twice keeps the last).
   */
  putCheckpoint(request: PutCheckpointRequest): Promise<void>;

  /**
   * Stores pending writes of one task on one checkpoint, per `request.mode`. Chunks first, writes
   * after. Once this resolves, the writes are durable.
   */
  putWrites(request: PutWritesRequest): Promise<void>;

  /**
   * Returns one checkpoint (by id, or the newest of the namespace when `checkpointId` is undefined)
   * with the blobs it references and its pending writes, or `undefined`.
   */
  getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined>;

  /**
   * Yields checkpoints newest first (by id, compared as strings, within a namespace; across
   * namespaces or threads in any stable order), each with its blobs and writes. Implementations page
   * through the database rather than loading every match at once.
   */
  listCheckpoints(query: ListCheckpointsQuery): AsyncIterable<StoredCheckpoint>;

  /**
   * Returns the ancestors of a checkpoint that a set of delta channels need, in a number of database
   * calls that does not grow with the depth of the thread.
   */
  getHistory(query: HistoryQuery): Promise<HistoryResult>;

  /**
   * Fetches every chunk (every index) of each hash, in one call. Missing ones are simply absent from
   * the result.
   */
  getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]>;

  /**
   * Fetches blobs by `(channel, version)`, for resolving delta blobs whose base the first fetch did not
   * include. Missing blobs are absent from the result.
   */
  getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]>;

  /** Removes every checkpoint, blob, write and chunk of the thread, in every namespace. */
  deleteThread(threadId: string): Promise<void>;

  /** Registers a listener called after every database command (see {@link StoreCapabilities.commandEvents}). */
  instrument?(listener: StoreCommandListener | undefined): void;

  /** Releases connections the store opened itself. Connections handed in by the caller stay open. */
  close(): Promise<void>;
}
