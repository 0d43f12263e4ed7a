/**
 * The one saver: LangGraph.js's `BaseCheckpointSaver` implemented on top of any {@link CheckpointStore}.
 * Everything that must not differ between databases lives here: serialization, which channels are
 * written, the pending-write rules and order, delta-channel history, chunking, ordering of writes
 * before checkpoints, and errors.
 *
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  maxChannelVersion,
  writesSortKey,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";

import { checkpointForm, expandCheckpoint, storedCheckpoint } from "./checkpoint-form.js";
import { copyThreadRecords, type CopyThreadResult } from "./copy-thread.js";
import {
  addRetentionResults,
  checkpointKey,
  emptyRetentionResult,
  planRetention,
  selectForPrune,
  type CheckpointFacts,
  type PruneSelection,
  type RetentionResult,
} from "./retention.js";
import { DeltaCache, extendsList, type DeltaCacheOptions, type LineageState, type ListState } from "./delta-cache.js";
import { CapabilityMissingError, CorruptRecordError, InvalidConfigError, LeaseLostError, MissingThreadIdError } from "./errors.js";
import { ID_RULES, checkIdentifier } from "./ids.js";
import { canonicalFilter } from "./metadata-filter.js";
import { RUNTIME_METADATA_KEYS, filterableMetadata, plainMetadataFields, recordMetadata } from "./metadata-form.js";
import { RecordReader, RecordWriter, blobKey, deltaOf, listOf, type WriteSettings } from "./record-codec.js";
import { EMPTY_VALUE, canonicalJson, canonicalJsonText, canonicalPlainJson, defineKey, isDefaultSerde } from "./serialization.js";
import {
  DEFAULT_CAPABILITIES,
  type BlobRecord,
  type ChunkRecord,
  type CheckpointRecord,
  type CheckpointStore,
  type Lease,
  type LeaseFence,
  type LeaseState,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type SerializedValue,
  type StoreCapabilities,
  type StoredCheckpoint,
  type ThreadRecords,
  type ThreadStatusPatch,
  type ThreadStatusWrite,
  type WriteRecord,
} from "./store.js";
import {
  DEFAULT_STATUS_RESOLUTION_MS,
  MAX_THREADS_PAGE,
  applyPatchToWrite,
  checkpointState,
  decodeCursor,
  encodeCursor,
  statesOf,
  statusPatchOfWrites,
  toThreadStatus,
  type ListThreadsOptions,
  type ThreadPage,
  type ThreadStatus,
} from "./thread-status.js";
import { nextVersion } from "./versions.js";

/** Options of {@link ResumableSaver}. */
export interface ResumableSaverOptions {
  /** The serializer; LangGraph's `JsonPlusSerializer` by default. */
  serde?: SerializerProtocol;
  /**
   * Refuse any single serialized value (a channel, a write, the metadata) larger than this, with a
   * {@link ValueTooLargeError} naming it. Default: no limit beyond the store's own (values larger than
   * the store's item limit are split into chunks, not refused).
   */
  maxValueBytes?: number;
  /**
   * Store a list channel that extends the value its parent checkpoint held (a message list with new
   * messages, a `DeltaChannel` snapshot after the previous one) as the elements it gained, with a whole
   * value again after `maxChain` deltas (default 1024). Default `true`; `false` stores every value whole.
   * Detection compares elements by identity: a node that edits an element of a list in place, instead
   * of returning a new element, is not seen as a change of that element.
   */
  deltas?: boolean | { maxChain?: number };
  /**
   * Store large list elements and strings (at least `minBytes` of JSON, default 256) once per thread,
   * referenced from every value that holds them: a message reaches the saver as an input, a write and a
   * channel value, and is stored once. Only with LangGraph's default serializer and a store that
   * declares `capabilities.valueRefs`. Default on; `false` turns it off.
   */
  pieces?: false | { minBytes?: number };
  /** Bounds of what the saver remembers per thread to write deltas (see {@link DeltaCacheOptions}). */
  cache?: DeltaCacheOptions;
  /**
   * Keep a status per thread (pending, done, failed, interrupted; see {@link ResumableSaver.listThreads})
   * on every root checkpoint and on `ERROR`/`INTERRUPT`/`RESUME` writes. Default `true` when the store
   * declares `capabilities.threadStatus`; `false` turns it off (a put then costs what it did without).
   */
  threadStatus?: boolean;
  /**
   * How far a thread's `updatedAt` (its last activity, as `listThreads` orders and filters by it) may
   * trail its latest root checkpoint, in ms. Default {@link DEFAULT_STATUS_RESOLUTION_MS} (1 s): a put
   * that leaves the thread's state as it was, within that time of the stored `updatedAt`, then leaves
   * the status index alone (one row rewritten instead of a row and an index entry; on PostgreSQL, an
   * update that leaves no dead index entry). A state change always moves `updatedAt`. `0`: every put
   * moves it.
   */
  statusResolutionMs?: number;
}

/** Options of {@link ResumableSaver.claimLease}. */
export interface ClaimLeaseOptions {
  /** Who claims (host, pid and a random part, for example); at most 256 bytes. */
  workerId: string;
  /** How long the lease lasts without a renewal, in milliseconds. */
  ttlMs: number;
}

/** Options of {@link ResumableSaver.withLease}. */
export interface WithLeaseOptions {
  /**
   * Called (once) when a write through the leased saver is refused because the lease was lost, before
   * the call rejects with the {@link LeaseLostError}: abort the run here (an `AbortController` whose
   * signal the run was given), since whatever it computes from now on is discarded.
   */
  onLost?: (error: LeaseLostError) => void;
}

/**
 * What {@link ResumableSaver.prune} keeps. Give `keepLast`, `olderThan`, or both (a checkpoint then
 * stays only if both keep it).
 */
export interface PruneOptions {
  /**
   * Keep the newest this many root checkpoints of each thread (a positive integer), with the subgraph
   * checkpoints that belong to them.
   */
  keepLast?: number;
  /** Remove checkpoints written before this time (a `Date`, or ms since the epoch), by their `ts`. */
  olderThan?: Date | number;
}

/** A change to a thread's status, for {@link ResumableSaver.updateThreadStatus}. */
export type ThreadStatusUpdate = Omit<ThreadStatusPatch, "updatedAt"> & { updatedAt?: number };

interface LeaseBinding {
  lease: Lease;
  onLost: ((error: LeaseLostError) => void) | undefined;
  lost: boolean;
}

/** What a special write noted for a checkpoint whose put had not reached the store yet. */
interface StatusNote {
  checkpointId: string;
  patches: ThreadStatusPatch[];
}

/** Notes kept at most (one per thread; the oldest go first). */
const MAX_STATUS_NOTES = 1000;

const DEFAULT_MAX_CHAIN = 1024;
const DEFAULT_PIECE_BYTES = 256;

type Scope = { threadId: string; checkpointNs: string };

const SPECIAL_CHANNELS = new Set(Object.keys(WRITES_IDX_MAP));

/**
 * A LangGraph.js checkpointer over any {@link CheckpointStore}. Backend packages export ready
 * subclasses (`SqliteSaver`, `PostgresSaver`...); use this class directly for your own store.
 *
 * @example
 * ```ts
 * import { MemoryStore, ResumableSaver } from "@resumable/core";
 * const checkpointer = new ResumableSaver(new MemoryStore());
 * await checkpointer.setup();
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * ```
 */
export class ResumableSaver extends BaseCheckpointSaver {
  /** The store this saver writes to. */
  readonly store: CheckpointStore;
  /** The store's capabilities with defaults filled in. */
  readonly capabilities: StoreCapabilities;
  /** putWrites calls in flight per thread, so that a checkpoint never lands before them. */
  private readonly inflightWrites = new Map<string, Set<Promise<unknown>>>();
  private readonly writeSettings: WriteSettings;
  /** Deltas after which a whole value is written again; 0 when deltas are off. */
  private readonly maxChain: number;
  private readonly lineages: DeltaCache;
  /** Whether puts and special writes carry the thread's status. */
  readonly tracksStatus: boolean;
  /** See {@link ResumableSaverOptions.statusResolutionMs}. */
  private readonly statusResolutionMs: number;
  /** Root puts at the store, per thread, so that a status-changing write on that checkpoint lands after it. */
  private readonly inflightPuts = new Map<string, { checkpointId: string; promise: Promise<unknown> }>();
  /** Status changes of writes that came before their checkpoint's put (see {@link statusOfPut}). */
  private readonly statusNotes = new Map<string, StatusNote>();
  /** Set on the views {@link withLease} returns; undefined on a saver of its own. */
  protected leaseBinding: LeaseBinding | undefined;

  constructor(store: CheckpointStore, options: ResumableSaverOptions = {}) {
    super(options.serde);
    this.store = store;
    this.capabilities = { ...DEFAULT_CAPABILITIES, ...store.capabilities };
    const pieceMinBytes = options.pieces === false ? undefined : (options.pieces?.minBytes ?? DEFAULT_PIECE_BYTES);
    this.writeSettings = {
      serde: this.serde,
      maxValueBytes: options.maxValueBytes ?? Number.POSITIVE_INFINITY,
      maxItemBytes: this.capabilities.maxItemBytes,
      pieceMinBytes: this.capabilities.valueRefs ? pieceMinBytes : undefined,
    };
    this.maxChain =
      options.deltas === false || !this.capabilities.deltaRanges
        ? 0
        : ((typeof options.deltas === "object" ? options.deltas.maxChain : undefined) ?? DEFAULT_MAX_CHAIN);
    this.lineages = new DeltaCache(options.cache);
    this.tracksStatus = this.capabilities.threadStatus && options.threadStatus !== false;
    const resolution = options.statusResolutionMs ?? DEFAULT_STATUS_RESOLUTION_MS;
    if (typeof resolution !== "number" || !Number.isFinite(resolution) || resolution < 0) {
      throw new InvalidConfigError("statusResolutionMs", `ResumableSaver: "statusResolutionMs" must be a finite number of ms, at least 0, got ${describe(resolution)}.`);
    }
    this.statusResolutionMs = resolution;
  }

  /**
   * Channel versions unique per write, not per lineage, and short (see `versions.ts`): with plain
   * integers a fork from an old checkpoint would produce versions that the abandoned branch already
   * stored for other values, and since blobs are keyed by `(channel, version)` the old value would come
   * back. They still compare in order, as strings.
   */
  override getNextVersion(current: number | undefined): number {
    // LangGraph's own typing says number, but it accepts string versions (its Postgres savers use them).
    return nextVersion(current) as unknown as number;
  }

  /** Prepares the store (tables, indexes). Idempotent. */
  async setup(): Promise<void> {
    await this.store.setup();
  }

  /**
   * Runs {@link setup} and returns this saver; if setup fails, closes the store before rethrowing, so
   * a failed `connect()` leaves no connection open. Backends' `connect()` helpers end with it.
   */
  async ready(): Promise<this> {
    try {
      await this.setup();
    } catch (error) {
      await this.close();
      throw error;
    }
    return this;
  }

  /** Closes the store's own connections. */
  async close(): Promise<void> {
    await this.store.close();
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = optionalThreadId(config);
    if (threadId === undefined) return undefined;
    const checkpointNs = namespaceOf(config);
    const checkpointId = optionalString(config.configurable?.checkpoint_id, "checkpoint_id");
    const stored = await this.store.getCheckpoint({ threadId, checkpointNs, checkpointId });
    if (!stored) return undefined;
    // The runtime continues from what getTuple returns: remember it, so the next put can write deltas.
    return this.toTuple(stored, true);
  }

  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const threadId = optionalThreadId(config);
    const configurable = config.configurable ?? {};
    const checkpointNs = configurable.checkpoint_ns === undefined ? undefined : namespaceOf(config);
    const checkpointId = optionalString(configurable.checkpoint_id, "checkpoint_id");
    const before = optionalString(options.before?.configurable?.checkpoint_id, "before.checkpoint_id");
    const filter = canonicalFilter(options.filter);
    let remaining = options.limit;
    if (remaining !== undefined && (!Number.isInteger(remaining) || remaining < 0)) {
      throw new InvalidConfigError("limit", `list(): "limit" must be a non-negative integer, got ${describe(remaining)}.`);
    }
    if (remaining === 0) return;
    // The runtime's own keys may be kept out of what a store filters on (see metadata-form.ts).
    const native = filter === undefined || (this.capabilities.nativeMetadataFilter && !Object.keys(filter).some((key) => RUNTIME_METADATA_KEYS.has(key)));
    const wanted = filter ? Object.keys(filter).map((key) => [key, canonicalJsonText(filter[key])] as const) : [];
    const records = this.store.listCheckpoints({
      threadId,
      checkpointNs,
      checkpointId,
      before,
      limit: native ? remaining : undefined,
      filter: native ? filter : undefined,
    });
    for await (const stored of records) {
      // Core re-checks every record: a store's native filter is an optimisation, never the authority.
      if (wanted.length > 0) {
        const metadata = filterableMetadata(stored.record);
        if (!wanted.every(([key, text]) => canonicalJsonText(ownValue(metadata, key)) === text)) continue;
      }
      yield await this.toTuple(stored, false);
      if (remaining !== undefined) {
        remaining -= 1;
        if (remaining <= 0) return;
      }
    }
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = requiredThreadId(config, "put");
    const checkpointNs = namespaceOf(config);
    const parentCheckpointId = optionalString(config.configurable?.checkpoint_id, "checkpoint_id");
    if (typeof checkpoint?.id !== "string" || checkpoint.id === "") {
      throw new InvalidConfigError("checkpoint.id", `put(): the checkpoint has no string "id" (got ${describe(checkpoint?.id)}).`);
    }
    checkIdentifier(checkpoint.id, ID_RULES.checkpointId, "put()");
    const versions = checkpoint.channel_versions ?? {};
    // One loop, no intermediate arrays: with a channel per node, this was a quarter of put's own time.
    const channelVersions: Record<string, string> = {};
    for (const channel of Object.keys(versions)) {
      checkIdentifier(channel, ID_RULES.channel, "put()");
      defineKey(channelVersions, channel, String(versions[channel]));
    }
    const writer = new RecordWriter(this.writeSettings);
    // The parent is almost always the checkpoint this saver wrote or read last: no await then.
    const parent =
      parentCheckpointId === undefined || this.maxChain === 0
        ? undefined
        : (this.cachedLineage(threadId, checkpointNs, parentCheckpointId) ?? (await this.storedLineage(threadId, checkpointNs, parentCheckpointId)));
    const lists = new Map<string, ListState>(parent?.lists ?? []);
    const deltaRoots: Record<string, string> = {};
    // A channel carried over (not in newVersions) keeps its blob, and so its delta root.
    for (const [channel, root] of Object.entries(parent?.deltaRoots ?? {})) {
      if (!(channel in (newVersions ?? {})) && parent?.channelVersions[channel] === channelVersions[channel]) deltaRoots[channel] = root;
    }
    const blobs: BlobRecord[] = [];
    const values = checkpoint.channel_values ?? {};
    // The compact record names the channels this put stores a blob for, so a channel without a value
    // needs no blob at all; the object form keeps an "empty" blob for it, as earlier releases did.
    const form = checkpointForm(checkpoint);
    const written = form.masked ? new Set<string>() : undefined;
    // Channels holding null, carried over or new: the record says so, and no blob is stored for them.
    const nulls = written && isDefaultSerde(this.serde) ? nullChannels(values as Record<string, unknown>, channelVersions) : undefined;
    let cachedBytes = 0;
    for (const [channel, rawVersion] of Object.entries(newVersions ?? {})) {
      if (!Object.prototype.hasOwnProperty.call(channelVersions, channel)) checkIdentifier(channel, ID_RULES.channel, "put()");
      const version = String(rawVersion);
      const value = Object.prototype.hasOwnProperty.call(values, channel) ? (values as Record<string, unknown>)[channel] : undefined;
      const target = `channel "${channel}"`;
      if (value === undefined) {
        // No value at this version (an empty channel, a DeltaChannel between snapshots); a list
        // stored earlier on the lineage stays the base for the next delta.
        if (!written) blobs.push({ channel, version, value: EMPTY_VALUE });
        continue;
      }
      if (nulls?.has(channel)) {
        lists.delete(channel);
        continue;
      }
      written?.add(channel);
      const list = this.maxChain > 0 ? listOf(value) : undefined;
      const base = list ? parent?.lists.get(channel) : undefined;
      if (list && base && base.depth < this.maxChain && extendsList(list, base.elements)) {
        const deltaValue = deltaOf(value, list, base.elements.length);
        const delta = writer.synchronous ? writer.valueNow(deltaValue, target, true) : await writer.value(deltaValue, target, true);
        blobs.push({ channel, version, value: delta, baseVersion: base.version });
        deltaRoots[channel] = base.root;
        const bytes = base.bytes + sizeOf(delta);
        lists.set(channel, { version, elements: list.slice(), root: base.root, depth: base.depth + 1, bytes });
      } else {
        const whole = writer.synchronous ? writer.valueNow(value, target, true) : await writer.value(value, target, true);
        blobs.push({ channel, version, value: whole });
        if (list) lists.set(channel, { version, elements: list.slice(), root: version, depth: 0, bytes: sizeOf(whole) });
        else lists.delete(channel);
      }
    }
    for (const state of lists.values()) cachedBytes += state.bytes;
    const stored = storedCheckpoint(form, written, nulls);
    const checkpointValue = writer.synchronous ? writer.valueNow(stored, "the checkpoint", false) : await writer.value(stored, "the checkpoint", false);
    const fullMetadata = withRunId(metadata, config);
    const fields = this.plainMetadataFields(fullMetadata) ?? (await this.serializedMetadataFields(writer, fullMetadata));
    const record: CheckpointRecord = {
      threadId,
      checkpointNs,
      checkpointId: checkpoint.id,
      parentCheckpointId,
      checkpoint: checkpointValue,
      metadata: fields.metadata,
      metadataJson: fields.metadataJson,
      channelVersions,
    };
    if (Object.keys(deltaRoots).length > 0) {
      // Stored as the root's counter only: a lower bound of the chain's range that sorts at or before
      // the root itself (the range may then hold a fork's blobs of the same counter too: harmless).
      record.deltaRoots = Object.fromEntries(Object.entries(deltaRoots).map(([channel, root]) => [channel, rootBound(root)]));
    }
    const fence = this.fenceFor(threadId, "put()");
    const baseState = this.tracksStatus && checkpointNs === "" ? checkpointState(checkpoint) : undefined;
    // A checkpoint must never become durable before the writes this process issued for the steps
    // before it, or a crash between the two re-runs a node that had finished (LangGraph Python #8039).
    if (this.inflightWrites.get(threadId)?.size) await this.writesSettled(threadId);
    // From here to the store call nothing awaits: a status-changing write either finds this put in
    // flight (and lands after it) or has left its note for it.
    const status = baseState === undefined ? undefined : this.statusOfPut(threadId, checkpoint.id, baseState);
    // Built field by field: conditional object spreads cost more than the rest of this function.
    const request: PutCheckpointRequest = { record, blobs, chunks: writer.chunks };
    if (fence) request.fence = fence;
    if (status) request.status = status;
    const landing = this.store.putCheckpoint(request);
    if (status) this.trackPut(threadId, checkpoint.id, landing);
    await this.fenced(landing);
    if (this.maxChain > 0) {
      this.lineages.set(threadId, checkpointNs, { checkpointId: checkpoint.id, channelVersions, deltaRoots, lists, bytes: cachedBytes });
    }
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } };
  }

  /**
   * What the parent checkpoint holds that a child builds on: its list values (bases for deltas) and
   * its delta roots (carried over with unchanged channels), from the cache when this saver wrote or
   * read the parent last; `undefined` otherwise (see {@link storedLineage}).
   */
  private cachedLineage(threadId: string, checkpointNs: string, parentId: string): LineageState | undefined {
    const cached = this.lineages.get(threadId, checkpointNs);
    return cached?.checkpointId === parentId ? cached : undefined;
  }

  /**
   * The parent's delta roots read from the store, once, when the cache does not have them (a put that
   * does not follow the checkpoint its process last saw is rare: the runtime reads before it writes).
   */
  private async storedLineage(threadId: string, checkpointNs: string, parentId: string): Promise<LineageState | undefined> {
    const stored = await this.store.getCheckpoint({ threadId, checkpointNs, checkpointId: parentId });
    if (!stored?.record.deltaRoots) return undefined;
    return { checkpointId: parentId, channelVersions: stored.record.channelVersions, deltaRoots: stored.record.deltaRoots, lists: new Map(), bytes: 0 };
  }

  /**
   * The metadata and its canonical JSON, when the metadata is plain JSON data (the runtime's always
   * is): stored once, as its `metadataJson` (the runtime's own keys written short, see
   * metadata-form.ts). `undefined` for anything else (see {@link serializedMetadataFields}).
   */
  private plainMetadataFields(metadata: CheckpointMetadata): Pick<CheckpointRecord, "metadata" | "metadataJson"> | undefined {
    const plain = isDefaultSerde(this.serde) ? canonicalPlainJson(metadata) : undefined;
    if (plain !== undefined && plain !== null && typeof plain === "object" && !Array.isArray(plain)) {
      return plainMetadataFields(plain as Record<string, unknown>);
    }
    return undefined;
  }

  /** Metadata that is not plain JSON data: serialized as well, so it round-trips. */
  private async serializedMetadataFields(writer: RecordWriter, metadata: CheckpointMetadata): Promise<Pick<CheckpointRecord, "metadata" | "metadataJson">> {
    const value = await writer.value(metadata, "the checkpoint metadata", false);
    // The metadata was serialized above, so it holds no cycle or bigint: canonical JSON needs no guard.
    return { metadata: value, metadataJson: canonicalJson(metadata) as Record<string, unknown> };
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = requiredThreadId(config, "putWrites");
    const checkpointNs = namespaceOf(config);
    const checkpointId = optionalString(config.configurable?.checkpoint_id, "checkpoint_id");
    if (checkpointId === undefined) {
      throw new InvalidConfigError(
        "checkpoint_id",
        `putWrites(): the config has no "configurable.checkpoint_id"; pending writes belong to a checkpoint. ` +
          `Pass the config returned by put().`,
      );
    }
    checkIdentifier(taskId, ID_RULES.taskId, "putWrites()");
    if (taskPath !== undefined) checkIdentifier(taskPath, ID_RULES.taskPath, "putWrites()");
    const fence = this.fenceFor(threadId, "putWrites()");
    const status = this.tracksStatus && checkpointNs === "" && Array.isArray(writes) ? statusPatchOfWrites(writes, taskId, checkpointId, Date.now()) : undefined;
    const task = this.trackWrites(threadId, this.storeWrites({ threadId, checkpointNs }, checkpointId, writes, taskId, taskPath ?? "", fence, status));
    await task;
  }

  override async deleteThread(threadId: string): Promise<void> {
    const id = threadIdOf(threadId, "deleteThread()");
    if (id === undefined) throw new MissingThreadIdError("deleteThread()");
    await this.writesSettled(id);
    this.lineages.deleteThread(id);
    this.statusNotes.delete(id);
    await this.store.deleteThread(id);
  }

  /**
   * Copies thread `fromThreadId` to `toThreadId`: every checkpoint of every namespace with the same
   * ids, metadata and pending writes, record for record (values keep their stored bytes, so the copy
   * reads back exactly as the source, delta channels included). The source is not changed. On a store
   * with thread status the copy gets the source's status (a dead-lettered thread stays dead; attempts
   * start again from 0); leases are not copied.
   *
   * The target must be unused: if it has checkpoints that are not copies of the source,
   * {@link CopyTargetNotEmptyError} and nothing is written. A copy cut short (a crash) leaves the
   * target with the oldest checkpoints only, each whole; calling `copyThread` again completes it.
   * Copy a thread nobody is writing to (hold its lease if workers may resume it): checkpoints added
   * to the source during the copy may or may not be included.
   *
   * @example Fork a conversation to try another answer without touching the original:
   * ```ts
   * await saver.copyThread("chat-42", "chat-42-experiment");
   * await graph.invoke({ messages: [question] }, { configurable: { thread_id: "chat-42-experiment" } });
   * ```
   */
  async copyThread(fromThreadId: string, toThreadId: string): Promise<CopyThreadResult> {
    const from = threadIdOf(fromThreadId, "copyThread()");
    const to = threadIdOf(toThreadId, "copyThread()");
    if (from === undefined || to === undefined) throw new MissingThreadIdError("copyThread()");
    checkIdentifier(from, ID_RULES.threadId, "copyThread()");
    checkIdentifier(to, ID_RULES.threadId, "copyThread()");
    if (from === to) throw new InvalidConfigError("thread_id", `copyThread(): the source and target are the same thread ${JSON.stringify(from)}; give the copy another id.`);
    await this.writesSettled(from);
    await this.writesSettled(to);
    this.lineages.deleteThread(to);
    const status = this.tracksStatus
      ? {
          source: await this.store.getThreadStatus?.(from),
          fallback: async () => {
            const latest = await this.getTuple({ configurable: { thread_id: from, checkpoint_ns: "" } });
            return latest ? checkpointState(latest.checkpoint) : ("pending" as const);
          },
        }
      : undefined;
    try {
      return await copyThreadRecords(this.store, from, to, status);
    } finally {
      this.lineages.deleteThread(to);
    }
  }

  /**
   * Removes old checkpoints of the given threads and everything only they use, while every checkpoint
   * that stays reads back exactly as before: `getTuple`, `list`, and the graph state LangGraph rebuilds
   * from it, `DeltaChannel` values included.
   *
   * What stays, per thread:
   * - the newest `keepLast` root checkpoints (namespace `""`), without those written before
   *   `olderThan`; the newest root checkpoint always stays, so a prune never deletes a thread (use
   *   {@link deleteThread}, or a store's TTL, for that);
   * - a subgraph's checkpoints with the root checkpoint they belong to (LangGraph names it in
   *   `metadata.parents[""]`); a subgraph namespace whose checkpoints name none is pruned on its own,
   *   like the root namespace;
   * - every checkpoint a kept one reads: for a `DeltaChannel` without a snapshot in that checkpoint,
   *   the ancestors back to the nearest snapshot (LangGraph rebuilds the value from their writes; a
   *   naive keep-latest prune leaves it empty, silently), and the parent of an old-format (`v < 4`)
   *   checkpoint; these are counted in `keptForHistory`. A channel that never snapshots keeps its
   *   whole history: give it a `snapshotFrequency`;
   * - the kept checkpoints' blobs (delta chains back to a whole value), pending writes, and the shared
   *   pieces and chunks these reference.
   *
   * Everything else of the thread is removed, including records a crash left behind. A kept
   * checkpoint's `parentConfig` still names its parent when that parent was removed, as LangGraph's
   * own savers leave it after a deletion. Each thread costs a bounded number of store calls (one
   * listing, one removal). The removal is one transaction on SQL stores; elsewhere it removes
   * checkpoints first, so a crash leaves only orphans, which the next prune removes.
   *
   * Prune a thread nobody is writing to. This saver waits for its own writes to the thread first;
   * through a saver from {@link withLease}, the removal is fenced by the lease (and only its thread
   * can be pruned). Needs a store with `capabilities.retention`.
   *
   * @param threadIds The threads to prune; missing ones are skipped. Without it, every thread the
   *   store lists through its status index (`listThreads`, needs `capabilities.threadStatus`).
   * @example Keep the last ten steps of a conversation:
   * ```ts
   * const { checkpoints, bytes } = await saver.prune(["chat-42"], { keepLast: 10 });
   * ```
   * @example Every thread, nothing older than thirty days (each keeps at least its latest checkpoint):
   * ```ts
   * await saver.prune({ olderThan: Date.now() - 30 * 86_400_000 });
   * ```
   * @throws {CapabilityMissingError} when the store cannot list and remove a thread's records.
   * @throws {InvalidConfigError} for bad options, naming the option.
   */
  async prune(threadIds: readonly string[], options: PruneOptions): Promise<RetentionResult>;
  async prune(options: PruneOptions): Promise<RetentionResult>;
  async prune(first: readonly string[] | PruneOptions, second?: PruneOptions): Promise<RetentionResult> {
    const allThreads = !Array.isArray(first);
    const options = (allThreads ? first : second) as PruneOptions | undefined;
    const selection = pruneSelection(options);
    this.retentionMethods("prune()");
    let ids: string[];
    if (allThreads) {
      ids = await this.everyThread();
    } else {
      ids = [...new Set((first as readonly unknown[]).map((id) => requiredId(id, "prune()")))];
    }
    for (const id of ids) this.fenceFor(id, "prune()");
    let total = emptyRetentionResult();
    for (const threadId of ids) {
      total = addRetentionResults(total, await this.retain(threadId, "prune()", (records, facts) => selectForPrune(records, facts, selection)));
    }
    return total;
  }

  /**
   * Removes the checkpoints whose metadata names one of these runs (`metadata.run_id`, as LangGraph
   * Python and LangGraph Platform record it; LangGraph.js records it when the caller puts it in the
   * metadata), in every thread and namespace, with their pending writes and what only they use: a
   * rollback of those runs. Every other checkpoint reads back exactly as before. A checkpoint of one of
   * the runs that another checkpoint still reads (the ancestors back to a `DeltaChannel` snapshot)
   * stays, counted in `keptForHistory`: LangGraph Python's `delete_for_runs` removes it and leaves that
   * channel empty.
   *
   * What remains keeps its parent links as they were: a checkpoint whose parent was removed still
   * names it in `parentConfig` (LangGraph reads a checkpoint's state from the checkpoint and what it
   * reads, which stays). When the runs were a thread's latest, the thread's status (on a store that
   * keeps one) moves to its new latest root checkpoint; a thread left with no checkpoint has none.
   *
   * Finding the runs uses the store's metadata filter: an index lookup where the store filters
   * natively (`capabilities.nativeMetadataFilter`), a scan of every checkpoint otherwise. Through a
   * saver from {@link withLease}, only the leased thread may hold such checkpoints. Needs a store with
   * `capabilities.retention`.
   *
   * @example Roll back a run that was cancelled:
   * ```ts
   * await saver.deleteForRuns([runId]);
   * ```
   * @throws {CapabilityMissingError} when the store cannot list and remove a thread's records.
   */
  async deleteForRuns(runIds: readonly string[]): Promise<RetentionResult> {
    if (!Array.isArray(runIds)) throw new InvalidConfigError("runIds", `deleteForRuns(): pass an array of run ids, got ${describe(runIds)}.`);
    for (const id of runIds) {
      if (typeof id !== "string" || id === "") throw new InvalidConfigError("runIds", `deleteForRuns(): every run id must be a non-empty string, got ${describe(id)}.`);
    }
    this.retentionMethods("deleteForRuns()");
    const runs = new Set(runIds);
    const threads = new Set<string>();
    const named = (metadata: Record<string, unknown>) => {
      const runId = ownValue(metadata, "run_id");
      return typeof runId === "string" && runs.has(runId);
    };
    // One filtered query per run where the store filters natively; otherwise one scan for all of them.
    const queries = this.capabilities.nativeMetadataFilter ? [...runs].map((runId) => ({ filter: { run_id: runId } })) : runs.size > 0 ? [{}] : [];
    for (const query of queries) {
      for await (const stored of this.store.listCheckpoints(query)) {
        if (named(stored.record.metadataJson)) threads.add(stored.record.threadId);
      }
    }
    const ids = [...threads].sort();
    for (const id of ids) this.fenceFor(id, "deleteForRuns()");
    let total = emptyRetentionResult();
    for (const threadId of ids) {
      total = addRetentionResults(
        total,
        await this.retain(threadId, "deleteForRuns()", (records) => {
          const keep = new Set<string>();
          for (const record of records.checkpoints) if (!named(record.metadataJson)) keep.add(checkpointKey(record.checkpointNs, record.checkpointId));
          return keep;
        }),
      );
    }
    return total;
  }

  /**
   * One thread of a prune or deleteForRuns: lists its records, keeps what `select` picks and what those
   * read, and removes the rest in one store call.
   */
  private async retain(
    threadId: string,
    operation: string,
    select: (records: ThreadRecords, facts: Map<string, CheckpointFacts>) => Set<string>,
  ): Promise<RetentionResult> {
    const { list, remove } = this.retentionMethods(operation);
    await this.writesSettled(threadId);
    const records = await list(threadId);
    if (records.checkpoints.length === 0 && records.writes.length === 0 && records.blobs.length === 0 && records.chunks.length === 0) {
      return emptyRetentionResult();
    }
    const facts = await this.checkpointFacts(threadId, records);
    const plan = planRetention(records, select(records, facts), facts);
    const { request } = plan;
    if (request.checkpoints.length === 0 && request.blobs.length === 0 && request.chunks.length === 0) return plan.result;
    const status = await this.statusAfterRemoval(threadId, records, plan.kept);
    const fence = this.fenceFor(threadId, operation);
    // The delta cache may name a removed checkpoint as the base of the next put: forget the thread.
    this.lineages.deleteThread(threadId);
    try {
      await this.fenced(remove({ threadId, ...request, ...(fence ? { fence } : {}), ...(status !== undefined ? { status } : {}) }));
    } finally {
      this.lineages.deleteThread(threadId);
    }
    return plan.result;
  }

  /** The `ts` and format version of each checkpoint record, read from its serialized value. */
  private async checkpointFacts(threadId: string, records: ThreadRecords): Promise<Map<string, CheckpointFacts>> {
    const facts = new Map<string, CheckpointFacts>();
    const reader = new RecordReader(this.store, this.serde, { threadId, checkpointNs: "" }, undefined);
    await reader.prefetch(records.checkpoints.map((r) => r.checkpoint));
    for (const record of records.checkpoints) {
      const { checkpoint } = expandCheckpoint(await reader.load(record.checkpoint, `checkpoint ${record.checkpointId}`), record.channelVersions);
      const ts = typeof checkpoint.ts === "string" ? Date.parse(checkpoint.ts) : undefined;
      facts.set(checkpointKey(record.checkpointNs, record.checkpointId), {
        ts: ts !== undefined && Number.isFinite(ts) ? ts : undefined,
        v: typeof checkpoint.v === "number" ? checkpoint.v : undefined,
      });
    }
    return facts;
  }

  /**
   * When the removal takes away the root checkpoint the thread's status describes: the status of the
   * newest root checkpoint that stays (from its checkpoint and pending writes, read now, before the
   * removal), or `null` when none stays. `undefined`: the status is not affected.
   */
  private async statusAfterRemoval(threadId: string, records: ThreadRecords, kept: Set<string>): Promise<{ checkpointId: string; write: ThreadStatusWrite } | null | undefined> {
    if (!this.tracksStatus || !this.store.getThreadStatus) return undefined;
    // A status names the newest root checkpoint put with one: while that stays, nothing to read.
    let newest: string | undefined;
    for (const r of records.checkpoints) if (r.checkpointNs === "" && (newest === undefined || r.checkpointId > newest)) newest = r.checkpointId;
    if (newest === undefined || kept.has(checkpointKey("", newest))) return undefined;
    const current = await this.store.getThreadStatus(threadId);
    if (!current || kept.has(checkpointKey("", current.checkpointId))) return undefined;
    if (!records.checkpoints.some((r) => r.checkpointNs === "" && r.checkpointId === current.checkpointId)) return undefined;
    let latest: string | undefined;
    for (const key of kept) {
      const [ns, id] = key.split("\u0000") as [string, string];
      if (ns === "" && (latest === undefined || id > latest)) latest = id;
    }
    if (latest === undefined) return null;
    const tuple = await this.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: latest } });
    if (!tuple) return null;
    const now = Date.now();
    let write: ThreadStatusWrite = { state: checkpointState(tuple.checkpoint), updatedAt: now };
    const byTask = new Map<string, PendingWrite[]>();
    for (const [taskId, channel, value] of tuple.pendingWrites ?? []) {
      const list = byTask.get(taskId) ?? [];
      byTask.set(taskId, list);
      list.push([channel, value]);
    }
    for (const [taskId, writes] of byTask) {
      const patch = statusPatchOfWrites(writes, taskId, latest, now);
      if (patch) write = applyPatchToWrite(write, patch);
    }
    return { checkpointId: latest, write };
  }

  /** Every thread the store's status index lists, for a prune of every thread. */
  private async everyThread(): Promise<string[]> {
    const list = this.store.listThreads?.bind(this.store);
    // A saver that does not keep statuses (the option off) may see an index missing its threads: refuse
    // rather than prune some threads and silently skip others.
    if (!this.tracksStatus || !list) {
      const name = this.store.constructor?.name ?? "the store";
      throw new CapabilityMissingError(
        this.capabilities.threadStatus ? `${name} through a saver created with { threadStatus: false }` : name,
        "threadStatus",
        "prune() without thread ids",
        "the threads to prune are found through the thread index that a saver with thread status keeps; pass the thread ids instead",
      );
    }
    const ids: string[] = [];
    let after: { updatedAt: number; threadId: string } | undefined;
    for (;;) {
      const page = await list({ limit: MAX_THREADS_PAGE, ...(after ? { after } : {}) });
      for (const record of page) ids.push(record.threadId);
      if (page.length < MAX_THREADS_PAGE) break;
      const last = page[page.length - 1]!;
      after = { updatedAt: last.updatedAt, threadId: last.threadId };
    }
    return [...new Set(ids)];
  }

  /** The store's retention methods, or a {@link CapabilityMissingError} saying why they are needed. */
  private retentionMethods(operation: string): {
    list: NonNullable<CheckpointStore["listThreadRecords"]>;
    remove: NonNullable<CheckpointStore["deleteRecords"]>;
  } {
    const why = "it lists a thread's records and removes some of them, keeping what the remaining checkpoints read";
    const name = this.store.constructor?.name ?? "the store";
    if (!this.capabilities.retention) throw new CapabilityMissingError(name, "retention", operation, why);
    const list = this.store.listThreadRecords;
    const remove = this.store.deleteRecords;
    if (typeof list !== "function" || typeof remove !== "function") {
      throw new CapabilityMissingError(`${name} (it declares it but lacks listThreadRecords() or deleteRecords())`, "retention", operation, why);
    }
    return { list: list.bind(this.store), remove: remove.bind(this.store) };
  }

  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    const { config, channels } = options;
    if (channels.length === 0) return {};
    for (const channel of channels) checkIdentifier(channel, ID_RULES.channel, "getDeltaChannelHistory()");
    const empty = (): Record<string, DeltaChannelHistory> => Object.fromEntries(channels.map((ch) => [ch, { writes: [] }]));
    const threadId = optionalThreadId(config);
    if (threadId === undefined) return empty();
    const checkpointNs = namespaceOf(config);
    let checkpointId = optionalString(config.configurable?.checkpoint_id, "checkpoint_id");
    if (checkpointId === undefined) {
      const latest = await this.store.getCheckpoint({ threadId, checkpointNs });
      if (!latest) return empty();
      checkpointId = latest.record.checkpointId;
    }
    const scope = { threadId, checkpointNs };
    const { ancestors, chunks } = await this.store.getHistory({ ...scope, checkpointId, channels: [...channels] });
    const reader = new RecordReader(this.store, this.serde, scope, chunks);
    await reader.prefetch(ancestors.flatMap((a) => [...a.blobs.map((b) => b.value), ...a.writes.map((w) => w.value)]));
    // Every ancestor's blobs in one map: a seed's delta chain may run through older ancestors' ranges.
    const allBlobs = new Map<string, BlobRecord>();
    for (const ancestor of ancestors) for (const b of ancestor.blobs) allBlobs.set(blobKey(b.channel, b.version), b);
    const byId = new Map(ancestors.map((a) => [a.checkpointId, a]));
    const remaining = new Set(channels);
    const perAncestor: Array<Map<string, CheckpointPendingWrite[]>> = [];
    const seeds = new Map<string, unknown>();
    const seedStates = new Map<string, ListState>();
    let current = ancestors[0];
    const visited = new Set<string>();
    while (current && remaining.size > 0 && !visited.has(current.checkpointId)) {
      visited.add(current.checkpointId);
      const collected = new Map<string, CheckpointPendingWrite[]>();
      for (const write of sortWrites(current.writes)) {
        if (!remaining.has(write.channel)) continue;
        const value = await reader.load(write.value, `write "${write.channel}" of task ${write.taskId}`);
        const list = collected.get(write.channel) ?? [];
        list.push([write.taskId, write.channel, value]);
        collected.set(write.channel, list);
      }
      perAncestor.push(collected);
      for (const channel of [...remaining]) {
        const version = current.channelVersions[channel];
        const blob = version === undefined ? undefined : allBlobs.get(blobKey(channel, version));
        if (blob && blob.value.type !== "empty") {
          const resolved = await reader.blob(blob, allBlobs);
          seeds.set(channel, resolved.value);
          const list = listOf(resolved.value);
          if (list) seedStates.set(channel, { version: blob.version, elements: list.slice(), root: resolved.root, depth: resolved.depth, bytes: blobBytes(blob) });
          remaining.delete(channel);
        }
      }
      current = current.parentCheckpointId === undefined ? undefined : byId.get(current.parentCheckpointId);
    }
    this.rememberSeeds(threadId, checkpointNs, checkpointId, seedStates);
    const result: Record<string, DeltaChannelHistory> = {};
    for (const channel of channels) {
      const writes: CheckpointPendingWrite[] = [];
      for (let i = perAncestor.length - 1; i >= 0; i -= 1) writes.push(...(perAncestor[i]!.get(channel) ?? []));
      const entry: DeltaChannelHistory = { writes };
      if (seeds.has(channel)) entry.seed = seeds.get(channel);
      result[channel] = entry;
    }
    return result;
  }

  /**
   * A DeltaChannel's seed (its last snapshot) is the base of its next snapshot: when the runtime has
   * just loaded the checkpoint the history was read for, remember the seeds on that checkpoint's state.
   */
  private rememberSeeds(threadId: string, checkpointNs: string, checkpointId: string, seeds: Map<string, ListState>): void {
    if (seeds.size === 0 || this.maxChain === 0) return;
    const cached = this.lineages.get(threadId, checkpointNs);
    if (cached?.checkpointId !== checkpointId) return;
    const lists = new Map(cached.lists);
    let bytes = cached.bytes;
    for (const [channel, state] of seeds) {
      if (lists.has(channel)) continue;
      lists.set(channel, state);
      bytes += state.bytes;
    }
    this.lineages.set(threadId, checkpointNs, { ...cached, lists, bytes });
  }

  /** Resolves once every putWrites issued so far for the thread has settled (resolved or failed). */
  private async writesSettled(threadId: string): Promise<void> {
    const inflight = this.inflightWrites.get(threadId);
    if (!inflight || inflight.size === 0) return;
    await Promise.allSettled([...inflight]);
  }

  private trackWrites<T>(threadId: string, promise: Promise<T>): Promise<T> {
    let set = this.inflightWrites.get(threadId);
    if (!set) {
      set = new Set();
      this.inflightWrites.set(threadId, set);
    }
    const tracked = promise.finally(() => {
      set.delete(tracked);
      if (set.size === 0 && this.inflightWrites.get(threadId) === set) this.inflightWrites.delete(threadId);
    });
    set.add(tracked);
    return tracked;
  }

  private async storeWrites(
    scope: Scope,
    checkpointId: string,
    writes: PendingWrite[],
    taskId: string,
    taskPath: string,
    fence: LeaseFence | undefined,
    status: ThreadStatusPatch | undefined,
  ): Promise<void> {
    if (status) {
      this.noteStatus(scope.threadId, status);
      // The status describes this checkpoint only once its put has landed.
      const inflight = this.inflightPuts.get(scope.threadId);
      if (inflight?.checkpointId === checkpointId) await inflight.promise.catch(() => undefined);
    }
    if (!Array.isArray(writes)) throw new InvalidConfigError("writes", `putWrites(): writes must be an array of [channel, value] pairs.`);
    const writer = new RecordWriter(this.writeSettings);
    const records: WriteRecord[] = [];
    for (let i = 0; i < writes.length; i += 1) {
      const write = writes[i];
      if (!Array.isArray(write) || typeof write[0] !== "string") {
        throw new InvalidConfigError("writes", `putWrites(): write ${i} of task ${taskId} is not a [channel, value] pair.`);
      }
      const [channel, value] = write;
      checkIdentifier(channel, ID_RULES.channel, "putWrites()");
      const target = `write to channel "${channel}" (task ${taskId})`;
      records.push({
        taskId,
        idx: WRITES_IDX_MAP[channel] ?? i,
        channel,
        value: writer.synchronous ? writer.valueNow(value, target, true) : await writer.value(value, target, true),
        taskPath,
      });
    }
    if (records.length === 0) return;
    // A batch of only special channels replaces what is stored (an INTERRUPT becomes a RESUME);
    // anything else keeps the first write of a (task, idx), so a retried task changes nothing.
    const mode = records.every((r) => SPECIAL_CHANNELS.has(r.channel)) ? "upsert" : "ignore";
    await this.fenced(
      this.store.putWrites(writesRequest(scope, checkpointId, records, writer.chunks, mode, fence, status)),
    );
  }

  /** The status a root put carries: its own state, with what writes on the same checkpoint noted before it. */
  private statusOfPut(threadId: string, checkpointId: string, state: "pending" | "done"): ThreadStatusWrite {
    const now = Date.now();
    let status: ThreadStatusWrite = this.statusResolutionMs > 0 ? { state, updatedAt: now, keepUpdatedAtFrom: now - this.statusResolutionMs } : { state, updatedAt: now };
    const note = this.statusNotes.get(threadId);
    if (note?.checkpointId === checkpointId) {
      for (const patch of note.patches) status = applyPatchToWrite(status, patch);
      this.statusNotes.delete(threadId);
    }
    return status;
  }

  private noteStatus(threadId: string, patch: ThreadStatusPatch): void {
    const note = this.statusNotes.get(threadId);
    if (note?.checkpointId === patch.checkpointId) {
      note.patches.push(patch);
      return;
    }
    this.statusNotes.delete(threadId);
    if (this.statusNotes.size >= MAX_STATUS_NOTES) this.statusNotes.delete(this.statusNotes.keys().next().value!);
    this.statusNotes.set(threadId, { checkpointId: patch.checkpointId, patches: [patch] });
  }

  private trackPut(threadId: string, checkpointId: string, promise: Promise<unknown>): void {
    const entry = { checkpointId, promise };
    this.inflightPuts.set(threadId, entry);
    const clear = () => {
      if (this.inflightPuts.get(threadId) === entry) this.inflightPuts.delete(threadId);
    };
    promise.then(clear, clear);
  }

  /** The fence of the bound lease, when this is a leased view; refuses other threads. */
  private fenceFor(threadId: string, operation: string): LeaseFence | undefined {
    const binding = this.leaseBinding;
    if (!binding) return undefined;
    if (binding.lease.threadId !== threadId) {
      throw new InvalidConfigError(
        "thread_id",
        `${operation}: this saver is bound to the lease of thread ${JSON.stringify(binding.lease.threadId)} and cannot write thread ` +
          `${JSON.stringify(threadId)}. Use the saver withLease() was called on, or a lease of that thread.`,
      );
    }
    return { token: binding.lease.token, workerId: binding.lease.workerId };
  }

  /** Awaits a store call; when a fenced one is refused, tells the lease's owner once, then rethrows. */
  private async fenced<T>(call: Promise<T>): Promise<T> {
    try {
      return await call;
    } catch (error) {
      const binding = this.leaseBinding;
      if (binding && error instanceof LeaseLostError && !binding.lost) {
        binding.lost = true;
        binding.onLost?.(error);
      }
      throw error;
    }
  }

  private requireCapability(capability: "leases" | "threadStatus", operation: string): void {
    if (!this.capabilities[capability]) throw new CapabilityMissingError(this.store.constructor?.name ?? "the store", capability, operation);
  }

  private storeMethod<K extends keyof CheckpointStore>(name: K, capability: "leases" | "threadStatus", operation: string): NonNullable<CheckpointStore[K]> {
    this.requireCapability(capability, operation);
    const method = this.store[name];
    if (typeof method !== "function") {
      throw new CapabilityMissingError(`${this.store.constructor?.name ?? "the store"} (it declares it but has no ${String(name)}())`, capability, operation);
    }
    return (method as (...args: unknown[]) => unknown).bind(this.store) as NonNullable<CheckpointStore[K]>;
  }

  // -------------------------------------------------------------------------------------------------
  // Leases
  // -------------------------------------------------------------------------------------------------

  /**
   * Claims a thread for a worker: a {@link Lease} with a fencing token greater than any before it, or
   * `undefined` while another worker holds an unexpired lease. Renew it ({@link renewLease}) well
   * before `expiresAt`, write through {@link withLease}, and {@link releaseLease} it when done. Needs a
   * store with `capabilities.leases`.
   *
   * @example
   * ```ts
   * const lease = await saver.claimLease("order-42", { workerId: "worker-1", ttlMs: 30_000 });
   * if (lease) {
   *   const graph = builder.compile({ checkpointer: saver.withLease(lease) });
   *   try { await graph.invoke(null, { configurable: { thread_id: "order-42" } }); }
   *   finally { await saver.releaseLease(lease); }
   * }
   * ```
   */
  async claimLease(threadId: string, options: ClaimLeaseOptions): Promise<Lease | undefined> {
    const claim = this.storeMethod("claimLease", "leases", "claimLease()");
    const id = requiredId(threadId, "claimLease()");
    checkIdentifier(options?.workerId, ID_RULES.workerId, "claimLease()");
    const ttlMs = ttlOf(options?.ttlMs, "claimLease()");
    return claim({ threadId: id, workerId: options.workerId, ttlMs });
  }

  /**
   * Extends a lease by `ttlMs` from now and returns it with its new `expiresAt`.
   *
   * @throws {LeaseLostError} when another worker claimed the thread meanwhile, or the lease was released.
   */
  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    const renew = this.storeMethod("renewLease", "leases", "renewLease()");
    checkLease(lease, "renewLease()");
    return renew(lease, ttlOf(ttlMs, "renewLease()"));
  }

  /** Gives a lease up; writes fenced with it fail from now on. Does nothing for a lease no longer current. */
  async releaseLease(lease: Lease): Promise<void> {
    const release = this.storeMethod("releaseLease", "leases", "releaseLease()");
    checkLease(lease, "releaseLease()");
    await release(lease);
  }

  /** The thread's lease record (holder, token, expiry), or `undefined` when it was never claimed. */
  async getLease(threadId: string): Promise<LeaseState | undefined> {
    const get = this.storeMethod("getLease", "leases", "getLease()");
    return get(requiredId(threadId, "getLease()"));
  }

  /**
   * A saver for one thread, fenced by `lease`: its `put` and `putWrites` (and
   * {@link updateThreadStatus}) succeed only while the thread's lease still carries `lease.token`, as
   * checked by the store in the same atomic step as the write; once another worker has claimed the
   * thread they fail with {@link LeaseLostError} and nothing of them is stored. Reads are not fenced.
   * The view shares this saver's store and caches; writes to another thread through it are refused.
   */
  withLease(lease: Lease, options: WithLeaseOptions = {}): this {
    this.requireCapability("leases", "withLease()");
    checkLease(lease, "withLease()");
    const view = Object.create(this) as this;
    view.leaseBinding = { lease: { ...lease }, onLost: options.onLost, lost: false };
    return view;
  }

  /** The lease a view from {@link withLease} is bound to; `undefined` on a saver of its own. */
  get lease(): Lease | undefined {
    return this.leaseBinding ? { ...this.leaseBinding.lease } : undefined;
  }

  // -------------------------------------------------------------------------------------------------
  // Thread status
  // -------------------------------------------------------------------------------------------------

  /** The thread's status, or `undefined` when it has none yet. Needs `capabilities.threadStatus`. */
  async getThreadStatus(threadId: string): Promise<ThreadStatus | undefined> {
    const get = this.storeMethod("getThreadStatus", "threadStatus", "getThreadStatus()");
    const record = await get(requiredId(threadId, "getThreadStatus()"));
    return record ? toThreadStatus(record) : undefined;
  }

  /**
   * Threads by status, oldest activity first, one page at a time, through the store's index (never a
   * scan of the threads): unfinished ones (`status: ["pending", "failed"]`), those waiting for a person
   * (`"interrupted"`), the dead-lettered (`"dead"`). Needs `capabilities.threadStatus`.
   *
   * @example
   * ```ts
   * let cursor: string | undefined;
   * do {
   *   const page = await saver.listThreads({ status: "interrupted", olderThan: Date.now() - 60_000, cursor });
   *   for (const t of page.threads) console.log(t.threadId, t.interrupts[0]?.value);
   *   cursor = page.cursor;
   * } while (cursor);
   * ```
   */
  async listThreads(options: ListThreadsOptions = {}): Promise<ThreadPage> {
    const list = this.storeMethod("listThreads", "threadStatus", "listThreads()");
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_THREADS_PAGE) {
      throw new InvalidConfigError("limit", `listThreads(): "limit" must be an integer from 1 to ${MAX_THREADS_PAGE}, got ${describe(limit)}.`);
    }
    const states = statesOf(options.status);
    let olderThan: number | undefined;
    if (options.olderThan !== undefined) {
      olderThan = options.olderThan instanceof Date ? options.olderThan.getTime() : options.olderThan;
      if (typeof olderThan !== "number" || !Number.isFinite(olderThan)) {
        throw new InvalidConfigError("olderThan", `listThreads(): "olderThan" must be a Date or a number of ms since the epoch, got ${describe(options.olderThan)}.`);
      }
    }
    const after = options.cursor === undefined ? undefined : decodeCursor(options.cursor);
    const records = await list({ limit, ...(states ? { states } : {}), ...(olderThan !== undefined ? { olderThan } : {}), ...(after ? { after } : {}) });
    const page: ThreadPage = { threads: records.slice(0, limit).map(toThreadStatus) };
    if (records.length >= limit) page.cursor = encodeCursor(records[limit - 1]!);
    return page;
  }

  /**
   * Changes a thread's status (a recovery runner counts attempts and dead-letters this way), only if
   * its status still describes `update.checkpointId`; returns the new status, or `undefined` when it
   * did not apply. With a lease (given here, or the one a {@link withLease} view is bound to) the
   * change is fenced like a write.
   *
   * @throws {LeaseLostError} when fenced and the lease was lost.
   */
  async updateThreadStatus(threadId: string, update: ThreadStatusUpdate, options: { lease?: Lease } = {}): Promise<ThreadStatus | undefined> {
    const patch = this.storeMethod("patchThreadStatus", "threadStatus", "updateThreadStatus()");
    const id = requiredId(threadId, "updateThreadStatus()");
    checkIdentifier(update?.checkpointId, ID_RULES.checkpointId, "updateThreadStatus()");
    let fence: LeaseFence | undefined;
    if (options.lease) {
      this.requireCapability("leases", "updateThreadStatus({ lease })");
      checkLease(options.lease, "updateThreadStatus()");
      if (options.lease.threadId !== id) throw new InvalidConfigError("lease", `updateThreadStatus(): the lease is for thread ${JSON.stringify(options.lease.threadId)}, not ${JSON.stringify(id)}.`);
      fence = { token: options.lease.token, workerId: options.lease.workerId };
    } else {
      fence = this.fenceFor(id, "updateThreadStatus()");
    }
    const record = await this.fenced(patch({ threadId: id, patch: { ...update, updatedAt: update.updatedAt ?? Date.now() }, ...(fence ? { fence } : {}) }));
    return record ? toThreadStatus(record) : undefined;
  }

  /**
   * The `(channel, version)` pairs whose blobs must exist for `stored` to be whole: the channels its put
   * stored a blob for (a channel without a value has none), or, for a record of an earlier release or
   * in the object form, every version it names (those puts stored a blob for each). For checks of a
   * store's atomicity (the crash suite's tear check); reading a checkpoint already refuses one that
   * misses a blob its put stored.
   */
  async requiredBlobs(stored: StoredCheckpoint): Promise<Array<{ channel: string; version: string }>> {
    const { record } = stored;
    const reader = new RecordReader(this.store, this.serde, { threadId: record.threadId, checkpointNs: record.checkpointNs }, stored.chunks);
    const written = expandCheckpoint(await reader.load(record.checkpoint, `checkpoint ${record.checkpointId}`), record.channelVersions).written?.();
    return Object.entries(record.channelVersions)
      .filter(([channel]) => written === undefined || written.has(channel))
      .map(([channel, version]) => ({ channel, version }));
  }

  private async toTuple(stored: StoredCheckpoint, remember: boolean): Promise<CheckpointTuple> {
    const { record } = stored;
    const scope = { threadId: record.threadId, checkpointNs: record.checkpointNs };
    const reader = new RecordReader(this.store, this.serde, scope, stored.chunks);
    await reader.prefetch([record.checkpoint, record.metadata, ...stored.blobs.map((b) => b.value), ...stored.writes.map((w) => w.value)]);
    const { checkpoint, written, nulls } = expandCheckpoint(await reader.load(record.checkpoint, `checkpoint ${record.checkpointId}`), record.channelVersions);
    // Compact records leave out what the record holds anyway.
    if (checkpoint.id === undefined) checkpoint.id = record.checkpointId;
    if (checkpoint.channel_versions === undefined) checkpoint.channel_versions = { ...record.channelVersions };
    const metadata = (
      recordMetadata(record) ?? (await reader.load(record.metadata, `metadata of checkpoint ${record.checkpointId}`))
    ) as CheckpointMetadata;
    const blobs = new Map(stored.blobs.map((b) => [blobKey(b.channel, b.version), b]));
    const channelValues: Record<string, unknown> = {};
    const lists = new Map<string, ListState>();
    for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
      if (nulls?.has(channel)) {
        channelValues[channel] = null;
        continue;
      }
      const blob = blobs.get(blobKey(channel, String(version)));
      if (!blob && written?.().has(channel)) throw tornCheckpoint(record, channel, String(version));
      if (!blob || blob.value.type === "empty") continue;
      const resolved = await reader.blob(blob, blobs);
      channelValues[channel] = resolved.value;
      const list = remember ? listOf(resolved.value) : undefined;
      if (list) lists.set(channel, { version: blob.version, elements: list.slice(), root: resolved.root, depth: resolved.depth, bytes: blobBytes(blob) });
    }
    checkpoint.channel_values = channelValues;
    const pendingWrites: CheckpointPendingWrite[] = [];
    for (const write of sortWrites(stored.writes)) {
      pendingWrites.push([write.taskId, write.channel, await reader.load(write.value, `write "${write.channel}" of task ${write.taskId}`)]);
    }
    if (checkpoint.v < 4 && record.parentCheckpointId !== undefined) {
      await this.migratePendingSends(checkpoint, scope, record.parentCheckpointId);
    }
    if (remember && this.maxChain > 0) {
      let bytes = 0;
      for (const state of lists.values()) bytes += state.bytes;
      this.lineages.set(scope.threadId, scope.checkpointNs, {
        checkpointId: record.checkpointId,
        channelVersions: record.channelVersions,
        deltaRoots: record.deltaRoots ?? {},
        lists,
        bytes,
      });
    }
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: record.threadId, checkpoint_ns: record.checkpointNs, checkpoint_id: record.checkpointId } },
      checkpoint,
      metadata,
      pendingWrites,
    };
    if (record.parentCheckpointId !== undefined) {
      tuple.parentConfig = {
        configurable: { thread_id: record.threadId, checkpoint_ns: record.checkpointNs, checkpoint_id: record.parentCheckpointId },
      };
    }
    return tuple;
  }

  /**
   * Checkpoints older than format v4 kept pending `Send`s as TASKS writes on their parent; newer
   * runtimes expect them in `channel_values[TASKS]`.
   */
  private async migratePendingSends(checkpoint: Checkpoint, scope: Scope, parentCheckpointId: string): Promise<void> {
    const parent = await this.store.getCheckpoint({ ...scope, checkpointId: parentCheckpointId });
    const reader = new RecordReader(this.store, this.serde, scope, parent?.chunks);
    const sends: unknown[] = [];
    for (const write of sortWrites(parent?.writes ?? [])) {
      if (write.channel === TASKS) sends.push(await reader.load(write.value, `pending send of task ${write.taskId}`));
    }
    checkpoint.channel_values ??= {};
    (checkpoint.channel_values as Record<string, unknown>)[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}

/** The counter part of a version (`"2ab"` of `"2ab.Xy3_kQ9z"`), which sorts at or before it. */
function rootBound(version: string): string {
  const dot = version.indexOf(".");
  return dot > 0 ? version.slice(0, dot) : version;
}

/** The error for a checkpoint whose put stored a blob that a read does not find. */
function tornCheckpoint(record: CheckpointRecord, channel: string, version: string): CorruptRecordError {
  return new CorruptRecordError(
    `checkpoint ${record.checkpointId} of thread ${JSON.stringify(record.threadId)} (namespace ${JSON.stringify(record.checkpointNs)}) ` +
      `is torn: its put stored channel "${channel}" at version ${version}, and that blob is missing. ` +
      `The store made the checkpoint visible without all of its blobs, or lost one afterwards`,
  );
}

/** Bytes a stored value takes (its own bytes, or the size its chunks add up to). */
function sizeOf(value: SerializedValue): number {
  return value.chunkRef ? value.chunkRef.size : value.data.byteLength;
}

function blobBytes(blob: BlobRecord): number {
  return sizeOf(blob.value);
}

/** Pending writes in `writesSortKey` order: task path, then task id, then index. */
export function sortWrites(writes: WriteRecord[]): WriteRecord[] {
  return writes
    .map((w) => ({ w, key: writesSortKey(w.taskPath, w.taskId, w.idx) }))
    .sort((a, b) => compareWritesSortKeys(a.key, b.key))
    .map(({ w }) => w);
}

function requiredId(threadId: unknown, operation: string): string {
  const id = threadIdOf(threadId, operation);
  if (id === undefined) throw new MissingThreadIdError(operation);
  return id;
}

/**
 * The metadata with the run's id (`config.metadata.run_id`, where LangGraph.js hands a caller's
 * `invoke(input, { metadata: { run_id } })` to the saver) as `run_id`, as LangGraph Python's savers
 * record it, so that {@link ResumableSaver.deleteForRuns} can find the run's checkpoints. Metadata that
 * names a run already keeps its own.
 */
function withRunId(metadata: CheckpointMetadata, config: RunnableConfig): CheckpointMetadata {
  const runId: unknown = config.metadata?.run_id;
  if (typeof runId !== "string" || runId === "" || metadata === null || typeof metadata !== "object") return metadata;
  if (Object.prototype.hasOwnProperty.call(metadata, "run_id")) return metadata;
  return { ...metadata, run_id: runId } as CheckpointMetadata;
}

/** Checks {@link PruneOptions}: a positive integer `keepLast`, a valid `olderThan`, at least one of them. */
function pruneSelection(options: PruneOptions | undefined): PruneSelection {
  if (options === null || typeof options !== "object") {
    throw new InvalidConfigError("options", `prune(): pass options with "keepLast" or "olderThan", e.g. prune(["chat-42"], { keepLast: 10 }), got ${describe(options)}.`);
  }
  const { keepLast, olderThan } = options;
  if (keepLast === undefined && olderThan === undefined) {
    throw new InvalidConfigError("options", `prune(): say what to keep with "keepLast" (the newest N checkpoints) or "olderThan" (a Date), or both.`);
  }
  const selection: PruneSelection = {};
  if (keepLast !== undefined) {
    if (typeof keepLast !== "number" || !Number.isSafeInteger(keepLast) || keepLast < 1) {
      throw new InvalidConfigError("keepLast", `prune(): "keepLast" must be a positive integer (the newest checkpoints to keep; the latest always stays), got ${describe(keepLast)}.`);
    }
    selection.keepLast = keepLast;
  }
  if (olderThan !== undefined) {
    const ms = olderThan instanceof Date ? olderThan.getTime() : olderThan;
    if (typeof ms !== "number" || !Number.isFinite(ms)) {
      throw new InvalidConfigError("olderThan", `prune(): "olderThan" must be a valid Date or a number of ms since the epoch, got ${describe(olderThan)}.`);
    }
    selection.olderThan = ms;
  }
  return selection;
}

function ttlOf(ttlMs: unknown, operation: string): number {
  if (typeof ttlMs !== "number" || !Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > 2 ** 31 - 1) {
    throw new InvalidConfigError("ttlMs", `${operation}: "ttlMs" must be a positive integer of milliseconds (at most 2^31 - 1), got ${describe(ttlMs)}.`);
  }
  return ttlMs;
}

function checkLease(lease: Lease, operation: string): void {
  if (
    lease === null ||
    typeof lease !== "object" ||
    typeof lease.threadId !== "string" ||
    typeof lease.workerId !== "string" ||
    !Number.isSafeInteger(lease.token) ||
    lease.token < 1
  ) {
    throw new InvalidConfigError("lease", `${operation}: pass a lease returned by claimLease() or renewLease() (with threadId, workerId and a positive integer token).`);
  }
}

function requiredThreadId(config: RunnableConfig, operation: string): string {
  const threadId = optionalThreadId(config);
  if (threadId === undefined) throw new MissingThreadIdError(`${operation}()`);
  return threadId;
}

function optionalThreadId(config: RunnableConfig): string | undefined {
  return threadIdOf(config?.configurable?.thread_id, undefined);
}

/** A thread id as stores key it: a string, or a finite number in its decimal form (as LangGraph allows). */
function threadIdOf(value: unknown, operation: string | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  const where = operation ?? "configurable";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new InvalidConfigError("thread_id", `${where}: thread_id must be a string, got the number ${String(value)}.`);
    return String(value);
  }
  if (typeof value !== "string") {
    throw new InvalidConfigError("thread_id", `"configurable.thread_id" must be a string, got ${describe(value)}.`);
  }
  if (value === "") throw new InvalidConfigError("thread_id", `"configurable.thread_id" is an empty string; give each thread a non-empty id.`);
  return checkIdentifier(value, ID_RULES.threadId, where);
}

function namespaceOf(config: RunnableConfig): string {
  const value: unknown = config?.configurable?.checkpoint_ns;
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    throw new InvalidConfigError("checkpoint_ns", `"configurable.checkpoint_ns" must be a string, got ${describe(value)}.`);
  }
  return checkIdentifier(value, ID_RULES.checkpointNs, "configurable");
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new InvalidConfigError(field, `"${field}" must be a string, got ${describe(value)}.`);
  return checkIdentifier(value, { ...ID_RULES.checkpointId, field }, "configurable");
}

/** An own property only: a metadata key named `__proto__` must not read the prototype. */
function ownValue(record: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return value.length > 60 ? `a string of ${value.length} characters` : JSON.stringify(value);
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/** A putWrites request, built field by field (see put). */
function writesRequest(
  scope: Scope,
  checkpointId: string,
  writes: WriteRecord[],
  chunks: ChunkRecord[],
  mode: PutWritesRequest["mode"],
  fence: LeaseFence | undefined,
  status: ThreadStatusPatch | undefined,
): PutWritesRequest {
  const request: PutWritesRequest = { threadId: scope.threadId, checkpointNs: scope.checkpointNs, checkpointId, writes, chunks, mode };
  if (fence) request.fence = fence;
  if (status) request.status = status;
  return request;
}

/** The channels that have a version and hold `null` (own properties only). */
function nullChannels(values: Record<string, unknown>, channelVersions: Record<string, string>): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (const channel of Object.keys(channelVersions)) {
    if (values[channel] === null && Object.prototype.hasOwnProperty.call(values, channel)) (out ??= new Set()).add(channel);
  }
  return out;
}
