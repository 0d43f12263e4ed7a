/**
 * The storage contract a backend implements.
 *
 * A store holds *already serialized* records and knows nothing of LangGraph's types: the saver in
 * {@link ResumableSaver} owns serialization, channel versions, the write rules, ordering and errors.
 * The contract is shaped so that it fits SQL databases (one transaction), Redis (MULTI/EXEC or a
 * script), MongoDB and DynamoDB (no multi-item transaction: write dependents first, the record that
 * makes them visible last) and stores with an item-size limit (core splits large values into chunks).
 *
 * Two optional parts let several processes share one database: thread leases with fencing tokens
 * ({@link StoreCapabilities.leases}, {@link LeaseFence}) and a status per thread kept on every root
 * checkpoint ({@link StoreCapabilities.threadStatus}, {@link ThreadStatusRecord}).
 *
 * @module
 */
// For the JSDoc links below: stores throw it when a fenced write finds its lease gone.
import type { LeaseLostError } from "./errors.js";

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
  /**
   * Present only when the saver is bound to a lease (see {@link LeaseFence}): the checkpoint may
   * become visible only if the thread's lease still carries this token, checked in the same atomic
   * step as the commit point. Never present for a store without {@link StoreCapabilities.leases}.
   */
  fence?: LeaseFence;
  /**
   * Present only for a root-namespace checkpoint (`checkpointNs === ""`) on a store that declares
   * {@link StoreCapabilities.threadStatus}: the thread's new status, to be stored with the checkpoint
   * (see {@link ThreadStatusWrite} for the rules).
   */
  status?: ThreadStatusWrite;
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
  /**
   * Present only when the saver is bound to a lease: none of the writes may become visible unless the
   * thread's lease still carries this token at the commit point (see {@link LeaseFence}).
   */
  fence?: LeaseFence;
  /**
   * Present only for writes on a root-namespace checkpoint that change the thread's status (an
   * `ERROR`, `INTERRUPT` or `RESUME` write), on a store with {@link StoreCapabilities.threadStatus}:
   * apply it as {@link CheckpointStore.patchThreadStatus} would, after the writes are stored, with
   * `patch.checkpointId === request.checkpointId`. It never fails the call: when its condition does
   * not hold (the thread's status describes another checkpoint), it is simply not applied.
   */
  status?: ThreadStatusPatch;
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
  /**
   * The store implements thread leases with fencing (default `false`): {@link CheckpointStore.claimLease},
   * {@link CheckpointStore.renewLease}, {@link CheckpointStore.releaseLease},
   * {@link CheckpointStore.getLease}, and it honours {@link PutCheckpointRequest.fence},
   * {@link PutWritesRequest.fence} and {@link PatchThreadStatusRequest.fence} as {@link LeaseFence}
   * says. Several workers may then share the database, each writing only the threads it holds.
   */
  leases: boolean;
  /**
   * The store keeps a status per thread (default `false`): it stores {@link PutCheckpointRequest.status}
   * and {@link PutWritesRequest.status}, and implements {@link CheckpointStore.getThreadStatus},
   * {@link CheckpointStore.listThreads} (through an index, never a scan) and
   * {@link CheckpointStore.patchThreadStatus}. Only then does the saver track status and can a
   * recovery runner find unfinished threads.
   */
  threadStatus: boolean;
  /**
   * The store implements {@link CheckpointStore.listThreadRecords} and
   * {@link CheckpointStore.deleteRecords} (default `false`): only then can the saver remove part of a
   * thread (`prune`, `deleteForRuns`) while keeping every record the remaining checkpoints read.
   */
  retention: boolean;
}

/** Defaults for every capability a store does not declare. */
export const DEFAULT_CAPABILITIES: StoreCapabilities = Object.freeze({
  maxItemBytes: Number.POSITIVE_INFINITY,
  nativeMetadataFilter: false,
  persistent: true,
  commandEvents: false,
  valueRefs: false,
  deltaRanges: false,
  leases: false,
  threadStatus: false,
  retention: false,
});

// ---------------------------------------------------------------------------------------------------
// Many workers: thread leases with fencing, and thread status.
// ---------------------------------------------------------------------------------------------------

/** What a worker asks for when it claims a thread. */
export interface LeaseClaim {
  threadId: string;
  /** Who claims: any non-empty string that tells workers apart (host, pid and a random part). */
  workerId: string;
  /** How long the lease lasts without a renewal, in milliseconds (a positive integer). */
  ttlMs: number;
}

/**
 * A thread lease, as {@link CheckpointStore.claimLease} and {@link CheckpointStore.renewLease} return
 * it. The token is the lease's identity: two leases of one thread never share a token.
 */
export interface Lease {
  threadId: string;
  workerId: string;
  /**
   * The fencing token: a positive safe integer, greater than every token handed out before for this
   * thread, by any worker, across restarts of every process (it is stored, never derived from a clock),
   * and across `deleteThread` (a store keeps the thread's lease record, or at least its last token,
   * when the thread is deleted, so that a worker still holding a lease of the old thread cannot write
   * into a new one of the same id).
   */
  token: number;
  /**
   * When the lease expires unless renewed, in milliseconds since the epoch, by the clock the store
   * judges expiry with (the database's own where it has one: `now()` in PostgreSQL, `TIME` in Redis;
   * the claiming process's clock otherwise). Expiry only decides when another worker may claim the
   * thread; it never lets a write through (the token does that), so clock skew can make a takeover
   * early or late but never lets two workers write one thread.
   */
  expiresAt: number;
}

/** A thread's lease record, as {@link CheckpointStore.getLease} reads it. */
export interface LeaseState extends Lease {
  /** The holder gave it up ({@link CheckpointStore.releaseLease}); its token stays the thread's last. */
  released: boolean;
}

/**
 * The condition a fenced write carries: the write may become visible only if, at its commit point,
 * the thread's lease record still holds exactly this token and has not been released. When the
 * condition fails, the store throws {@link LeaseLostError} (from `@resumable/core`'s errors) and none
 * of the records the call carried (the checkpoint, a write, the status) ever becomes visible to any
 * read: parts written before the commit point (blobs, chunks) may remain, invisible, as after a crash.
 *
 * Three properties must hold; each backend gets them from one native mechanism:
 *
 * 1. **Fencing**: once {@link CheckpointStore.claimLease} has returned token `T + 1`, no write fenced
 *    with token `T` (or lower) can commit any more. The claim and the commit check are ordered by the
 *    database: they read and write the same record under its own atomicity (a row lock, one key, one
 *    item or document).
 * 2. **Atomic check**: the check and the commit point are one atomic step, never a read followed by a
 *    write (a worker paused between the two would write after the takeover).
 * 3. **No loss**: a fenced write that resolved stays visible after any later claim; a takeover never
 *    hides what a previous holder wrote while it held the thread.
 *
 * Mechanisms that satisfy them:
 *
 * - **SQL**: the same transaction as the write, with the lease row locked against a concurrent claim:
 *   SQLite's `BEGIN IMMEDIATE` write lock, then `SELECT` the lease row first; PostgreSQL in the same
 *   statement, a `fence AS (SELECT ... FROM leases WHERE thread_id = $1 AND token = $2 AND worker_id IS
 *   NOT NULL FOR SHARE)` CTE that every insert of the statement is conditional on (`WHERE EXISTS
 *   (SELECT 1 FROM fence)`), so a claim's `UPDATE` of that row waits for the write or the write sees
 *   the new token.
 * - **Redis**: the same Lua script as the write; it reads the lease hash (in the thread's hash slot)
 *   before touching anything and returns an error without writing when the token differs.
 * - **DynamoDB with transactions**: `TransactWriteItems` of a `ConditionCheck` on the thread's lease
 *   item (`token = :t AND attribute_exists(worker)`) and the commit-point item(s); the parts go before,
 *   unconditionally, as for an unfenced put.
 * - **Without multi-item transactions (DynamoDB on an endpoint without them, MongoDB without a
 *   replica set)**: make the lease record the commit point. Write the records tagged with the fence
 *   (`{ token, op }`, `op` unique per call); a reader treats a tagged record as absent unless its `op`
 *   is listed as committed in the thread's lease record (the reader fetches that record only when it
 *   meets a tagged one). Then commit with one conditional update of the lease record
 *   (`token = :t`, not released) that adds `op` to its committed list, with the status of
 *   {@link PutCheckpointRequest.status} in the same update; if the condition fails, throw
 *   {@link LeaseLostError} (the tagged records stay invisible, garbage for `deleteThread`). After the
 *   commit, untag the records (unconditionally: they are committed) and drop `op` from the list (or
 *   leave that to the next commit's update). The commit point is then conditional on the thread's
 *   lease token, as the three properties ask, at two extra requests per fenced write and none per read
 *   once the records are untagged. This needs the conditional update itself to be atomic; where it
 *   is a read followed by a write (FerretDB 1.24), make the lease record a register of immutable
 *   entries keyed `(thread, seq)` and every change the insert of entry `seq + 1`, computed from the
 *   newest, so that the unique key decides between two changes made from one state (MongoDB's store
 *   with `manyWorkers` does this).
 */
export interface LeaseFence {
  token: number;
  /** The holder, for error messages; the token alone decides. */
  workerId: string;
}

/**
 * Where a thread stands, from its latest root checkpoint and the writes on it.
 *
 * - `"pending"`: the checkpoint has tasks to run (a node is triggered, a `Send` is queued): a run is
 *   in progress, or it stopped (crashed, was killed, timed out) before finishing; `invoke(null)`
 *   continues it.
 * - `"done"`: nothing left to run.
 * - `"failed"`: a task of the checkpoint wrote an `ERROR` (its message is in `error`); `invoke(null)`
 *   retries the failed tasks.
 * - `"interrupted"`: a task called `interrupt()` (its values are in `interrupts`); it waits for a
 *   person, and `Command({ resume })` answers it.
 * - `"dead"`: a recovery runner gave up after too many attempts (`error` says why). Set only through
 *   {@link CheckpointStore.patchThreadStatus}; a later checkpoint of the thread clears it.
 */
export type ThreadState = "pending" | "done" | "failed" | "interrupted" | "dead";

/** Every {@link ThreadState}, in the order reports list them. */
export const THREAD_STATES: readonly ThreadState[] = Object.freeze(["pending", "failed", "interrupted", "dead", "done"]);

/**
 * A thread's status as a store keeps it: one small record per thread, indexed by `(state, updatedAt,
 * threadId)` so that {@link CheckpointStore.listThreads} reads only what it returns.
 */
export interface ThreadStatusRecord {
  threadId: string;
  state: ThreadState;
  /** The root checkpoint this status describes (the thread's latest one). */
  checkpointId: string;
  /** Last activity (a root checkpoint, a status-changing write, an attempt), ms since the epoch. */
  updatedAt: number;
  /** For `"failed"` and `"dead"`: the last error's message (at most 4000 characters). */
  error?: string;
  /**
   * For `"interrupted"`: the pending interrupts, by task id; each value is that task's list of
   * `{ id, value }` as plain JSON. Stores keep it as data and merge patches into it by task id.
   */
  interrupts?: Record<string, unknown>;
  /**
   * Resumes started (by a recovery runner) since {@link checkpointId} was written: a new root
   * checkpoint resets it to 0, so it counts attempts that made no progress.
   */
  attempts: number;
  /** When the last attempt started, ms since the epoch. */
  attemptedAt?: number;
}

/**
 * The status a root checkpoint's put carries. The store writes it in the same atomic step as the
 * checkpoint's commit point, replacing the record: `checkpointId` becomes the put's, `state`, `error`
 * and `interrupts` become these (absent ones cleared), `attempts` becomes 0 and `attemptedAt` is
 * cleared. Except: when the stored record names a checkpoint id greater than the put's (compared as
 * strings, as checkpoint ids are), the stored record is kept, so a late put never moves a thread back.
 *
 * A store that cannot make the status part of the commit point (a separate item or document without a
 * transaction) must never leave a status that says more than the data: it writes the record after
 * the commit point, and also before it whenever the thread may currently be recorded as anything but
 * `"pending"` (e.g. on the first put a process makes for a thread), as `"pending"` with the new
 * `updatedAt`. A crash between the two then leaves the thread listed as pending, which recovery
 * resumes (and finds done), never as done while work remains.
 */
export interface ThreadStatusWrite {
  /** `"pending"` or `"done"` from the checkpoint; `"failed"`/`"interrupted"` when its writes came first. */
  state: Exclude<ThreadState, "dead">;
  error?: string;
  interrupts?: Record<string, unknown>;
  /** ms since the epoch. */
  updatedAt: number;
  /**
   * The store may keep the stored `updatedAt` when the stored record has the same `state` and an
   * `updatedAt` at least this (ms since the epoch); everything else (`checkpointId`, `error`,
   * `interrupts`, `attempts`, `attemptedAt`) is replaced as usual. The record's place in the status
   * index, `(state, updatedAt, threadId)`, then stays where it is, so a run's puts within the saver's
   * `statusResolutionMs` rewrite one row and no index entry. Absent: `updatedAt` is always written.
   * Stores may ignore it.
   */
  keepUpdatedAtFrom?: number;
}

/**
 * A change to one thread's status, applied atomically and only when the stored record describes
 * {@link checkpointId} (otherwise nothing changes). Absent fields stay as they are.
 */
export interface ThreadStatusPatch {
  /** The condition: the stored record's `checkpointId` must equal this. */
  checkpointId: string;
  state?: ThreadState;
  /** A string sets the error, `null` clears it. */
  error?: string | null;
  /**
   * Merged into the stored interrupts by task id, as a JSON merge patch: a task's value replaces that
   * task's entry, a `null` value removes it. `null` for the whole field clears every entry.
   */
  interrupts?: Record<string, unknown> | null;
  /** Added to `attempts` (a runner's `1`). */
  addAttempts?: number;
  attemptedAt?: number;
  /** The new `updatedAt`, ms since the epoch (moves the record in the index). */
  updatedAt: number;
}

/** What {@link CheckpointStore.patchThreadStatus} applies. */
export interface PatchThreadStatusRequest {
  threadId: string;
  patch: ThreadStatusPatch;
  /** When present, the patch applies only under this lease, checked as {@link LeaseFence} says. */
  fence?: LeaseFence;
}

/** Options of {@link CheckpointStore.listThreads}. */
export interface ListThreadsQuery {
  /** Only these states; absent means every state. Never empty. */
  states?: ThreadState[];
  /** Only threads whose `updatedAt` is strictly less than this (ms since the epoch). */
  olderThan?: number;
  /** Keyset paging: only threads after this position in the order `(updatedAt, threadId)`. */
  after?: { updatedAt: number; threadId: string };
  /** At most this many records (a positive integer; core asks for at most 1000). */
  limit: number;
}

// ---------------------------------------------------------------------------------------------------
// Retention: what a thread holds, and removing part of it.
// ---------------------------------------------------------------------------------------------------

/** A blob as {@link CheckpointStore.listThreadRecords} lists it: its key and what it references, not its bytes. */
export interface BlobKey {
  checkpointNs: string;
  channel: string;
  version: string;
  /** The blob's value is `type: "empty"` (a channel with a version but no stored value). */
  empty: boolean;
  /** {@link BlobRecord.baseVersion}: the blob is a delta over that version of the same channel. */
  baseVersion?: string;
  /** {@link SerializedValue.refs} of the value. */
  refs?: string[];
  /** The hash of {@link SerializedValue.chunkRef}, when the value lives in chunks. */
  chunkHash?: string;
  /** Bytes the value holds inline (`data`), for reporting what a removal frees. */
  bytes: number;
}

/** A pending write as {@link CheckpointStore.listThreadRecords} lists it. */
export interface WriteKey {
  checkpointNs: string;
  checkpointId: string;
  taskId: string;
  idx: number;
  channel: string;
  refs?: string[];
  chunkHash?: string;
  bytes: number;
}

/** One chunk (one index of one hash) as {@link CheckpointStore.listThreadRecords} lists it. */
export interface ChunkKey {
  hash: string;
  index: number;
  bytes: number;
}

/**
 * Every record of one thread, in every namespace, as {@link CheckpointStore.listThreadRecords} returns
 * it: checkpoint records whole (they are small, and core reads their `ts` and format version), blobs,
 * writes and chunks by key, with what each references but not their bytes.
 */
export interface ThreadRecords {
  checkpoints: CheckpointRecord[];
  blobs: BlobKey[];
  writes: WriteKey[];
  chunks: ChunkKey[];
}

/**
 * What {@link CheckpointStore.deleteRecords} removes from one thread. Core computes it so that every
 * checkpoint that stays keeps every record it reads; the store removes exactly what is listed.
 */
export interface DeleteRecordsRequest {
  threadId: string;
  /**
   * Checkpoints to remove, each with every pending write stored under its id (also when the id has
   * writes but no checkpoint record: writes left by a put that never landed).
   */
  checkpoints: Array<{ checkpointNs: string; checkpointId: string }>;
  /** Blobs to remove, by key. */
  blobs: Array<{ checkpointNs: string; channel: string; version: string }>;
  /** Chunks and shared pieces to remove: every index of each hash. */
  chunks: string[];
  /**
   * Present only on a store with {@link StoreCapabilities.threadStatus}, when the removal takes away the
   * root checkpoint the thread's status describes: the thread's new status, for its new latest root
   * checkpoint (`checkpointId`), stored in place of the record whatever it names (attempts 0), or
   * `null` when no root checkpoint remains (the record is removed). Applied after the removals.
   */
  status?: { checkpointId: string; write: ThreadStatusWrite } | null;
  /**
   * Present only when the saver is bound to a lease: nothing may be removed unless the thread's lease
   * still carries this token (checked as {@link LeaseFence} says, with the first removal).
   */
  fence?: LeaseFence;
}

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

  /**
   * Removes every checkpoint, blob, write and chunk of the thread, in every namespace, and its status.
   * Its lease record (its last fencing token) stays: see {@link Lease.token}.
   */
  deleteThread(threadId: string): Promise<void>;

  /**
   * Claims the thread for a worker, for `ttlMs`. Succeeds, with a new token (the thread's last plus
   * one; 1 for a thread never claimed), when the thread's lease is free: never claimed, released, or
   * expired (`expiresAt <= now`), or already held by the same `workerId` (a re-claim fences off the
   * worker's own older lease). Returns `undefined`, changing nothing, while another worker holds an
   * unexpired lease. Atomic: of two concurrent claims at most one succeeds. The thread need not have
   * any checkpoint. Only with {@link StoreCapabilities.leases}.
   */
  claimLease?(claim: LeaseClaim): Promise<Lease | undefined>;

  /**
   * Extends a lease to `now + ttlMs` (even an expired one, as long as nobody claimed the thread since)
   * and returns it with its new `expiresAt`. Throws {@link LeaseLostError} when the thread's lease no
   * longer carries `lease.token` or was released.
   */
  renewLease?(lease: Lease, ttlMs: number): Promise<Lease>;

  /**
   * Gives the lease up: the thread may be claimed at once, and writes fenced with this token fail from
   * now on. The token stays the thread's last. Does nothing when the lease is no longer current.
   */
  releaseLease?(lease: Lease): Promise<void>;

  /** The thread's lease record, or `undefined` when it was never claimed. */
  getLease?(threadId: string): Promise<LeaseState | undefined>;

  /** The thread's status, or `undefined` when it has none (no root checkpoint written since status was on). */
  getThreadStatus?(threadId: string): Promise<ThreadStatusRecord | undefined>;

  /**
   * Thread statuses in the order `(updatedAt, threadId)` ascending (oldest activity first), filtered by
   * {@link ListThreadsQuery}, at most `limit`. Served by an index on `(state, updatedAt, threadId)`:
   * the cost grows with what is returned, never with the number of threads (SQL: one index range per
   * state, each `LIMIT limit`, merged; Redis: a sorted set per state scored by `updatedAt`; DynamoDB:
   * a GSI keyed by state, sorted by `updatedAt#threadId`; MongoDB: an index on
   * `{ state: 1, updatedAt: 1, _id: 1 }`). An index that lags the records (a GSI, a second command on
   * a Redis cluster) is acceptable if every returned record is read back consistently and a thread is
   * never missing from the index of its current state.
   */
  listThreads?(query: ListThreadsQuery): Promise<ThreadStatusRecord[]>;

  /**
   * Applies a {@link ThreadStatusPatch} atomically (a read-modify-write of one record inside the
   * database: a transaction, a script, a conditional update) and returns the updated record, or
   * `undefined` when the thread has no status or its record describes another checkpoint. With
   * `fence`, it is a fenced write: {@link LeaseLostError} and no change when the lease moved on.
   */
  patchThreadStatus?(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined>;

  /**
   * Every record of the thread, in every namespace (see {@link ThreadRecords}): checkpoint records
   * whole, blobs, writes and chunks by key with what they reference, without their bytes. A bounded
   * number of database calls (one query per table, or one statement), whatever the thread's length,
   * read in one snapshot where the database has them. An expired thread (TTL) has none. Only with
   * {@link StoreCapabilities.retention}.
   */
  listThreadRecords?(threadId: string): Promise<ThreadRecords>;

  /**
   * Removes what the request lists from one thread, and nothing else. In one transaction where the
   * database has them. Without one, in this order, so that a crash between two steps leaves only
   * records nothing reads (which the next prune removes) and never a checkpoint missing something:
   * first the checkpoint records, then their pending writes, then blobs, then chunks. A listed record
   * that does not exist is skipped. With `fence`, refused with {@link LeaseLostError} (nothing removed)
   * when the thread's lease moved on. Only with {@link StoreCapabilities.retention}.
   */
  deleteRecords?(request: DeleteRecordsRequest): Promise<void>;

  /** Registers a listener called after every database command (see {@link StoreCapabilities.commandEvents}). */
  instrument?(listener: StoreCommandListener | undefined): void;

  /** Releases connections the store opened itself. Connections handed in by the caller stay open. */
  close(): Promise<void>;
}
