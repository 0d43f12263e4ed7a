/**
 * The one saver: LangGraph.js's `BaseCheckpointSaver` implemented on top of any {@link CheckpointStore}.
 * Everything that must not differ between databases lives here: serialization, which channels are
 * written, the pending-write rules and order, delta-channel history, chunking, ordering of writes
 * before checkpoints, and errors.
 *
 * @module
 */
import { randomBytes } from "node:crypto";

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

import { CorruptRecordError, InvalidConfigError, MissingThreadIdError } from "./errors.js";
import { ID_RULES, checkIdentifier } from "./ids.js";
import { canonicalFilter } from "./metadata-filter.js";
import {
  EMPTY_VALUE,
  canonicalJson,
  canonicalJsonText,
  deserializeValue,
  joinChunks,
  serializeValue,
  splitIfLarge,
} from "./serialization.js";
import {
  DEFAULT_CAPABILITIES,
  type BlobRecord,
  type CheckpointRecord,
  type CheckpointStore,
  type ChunkRecord,
  type SerializedValue,
  type StoreCapabilities,
  type StoredCheckpoint,
  type WriteRecord,
} from "./store.js";

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
}

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
  private readonly maxValueBytes: number;
  /** putWrites calls in flight per thread, so that a checkpoint never lands before them. */
  private readonly inflightWrites = new Map<string, Set<Promise<unknown>>>();

  constructor(store: CheckpointStore, options: ResumableSaverOptions = {}) {
    super(options.serde);
    this.store = store;
    this.capabilities = { ...DEFAULT_CAPABILITIES, ...store.capabilities };
    this.maxValueBytes = options.maxValueBytes ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Channel versions unique per write, not per lineage: `<step, zero-padded>.<random>`. With plain
   * integers a fork from an old checkpoint would produce versions that the abandoned branch already
   * stored for other values, and since blobs are keyed by `(channel, version)` the old value would come
   * back. Padded strings still compare in order.
   */
  override getNextVersion(current: number | undefined): number {
    const previous: unknown = current;
    const n =
      previous === undefined ? 0 : typeof previous === "number" ? previous : Number.parseInt(String(previous).split(".")[0] ?? "0", 10) || 0;
    // LangGraph's own typing says number, but it accepts string versions (its Postgres savers use them).
    return `${String(n + 1).padStart(32, "0")}.${randomBytes(8).toString("hex")}` as unknown as number;
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
    return this.toTuple(stored);
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
    const native = filter === undefined || this.capabilities.nativeMetadataFilter;
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
      if (wanted.length > 0 && !wanted.every(([key, text]) => canonicalJsonText(ownValue(stored.record.metadataJson, key)) === text)) continue;
      yield await this.toTuple(stored);
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
    for (const channel of Object.keys(checkpoint.channel_versions ?? {})) checkIdentifier(channel, ID_RULES.channel, "put()");
    const chunks: ChunkRecord[] = [];
    const limit = this.capabilities.maxItemBytes;
    const blobs: BlobRecord[] = [];
    const values = checkpoint.channel_values ?? {};
    for (const [channel, version] of Object.entries(newVersions ?? {})) {
      checkIdentifier(channel, ID_RULES.channel, "put()");
      const value = Object.prototype.hasOwnProperty.call(values, channel) ? (values as Record<string, unknown>)[channel] : undefined;
      const serialized =
        value === undefined ? EMPTY_VALUE : await serializeValue(this.serde, value, `channel "${channel}"`, this.maxValueBytes);
      blobs.push({ channel, version: String(version), value: splitIfLarge(serialized, limit, chunks) });
    }
    const { channel_values: _values, ...rest } = checkpoint;
    const bare = { ...rest, channel_values: {} };
    const record: CheckpointRecord = {
      threadId,
      checkpointNs,
      checkpointId: checkpoint.id,
      parentCheckpointId,
      checkpoint: splitIfLarge(await serializeValue(this.serde, bare, "the checkpoint", this.maxValueBytes), limit, chunks),
      metadata: splitIfLarge(await serializeValue(this.serde, metadata, "the checkpoint metadata", this.maxValueBytes), limit, chunks),
      // The metadata was serialized above, so it holds no cycle or bigint: canonical JSON needs no guard.
      metadataJson: canonicalJson(metadata) as Record<string, unknown>,
      channelVersions: Object.fromEntries(Object.entries(checkpoint.channel_versions ?? {}).map(([k, v]) => [k, String(v)])),
    };
    // A checkpoint must never become durable before the writes this process issued for the steps
    // before it, or a crash between the two re-runs a node that had finished (LangGraph Python #8039).
    await this.writesSettled(threadId);
    await this.store.putCheckpoint({ record, blobs, chunks });
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } };
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
    const task = this.trackWrites(threadId, this.storeWrites({ threadId, checkpointNs }, checkpointId, writes, taskId, taskPath ?? ""));
    await task;
  }

  override async deleteThread(threadId: string): Promise<void> {
    const id = threadIdOf(threadId, "deleteThread()");
    if (id === undefined) throw new MissingThreadIdError("deleteThread()");
    await this.writesSettled(id);
    await this.store.deleteThread(id);
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
    const { ancestors } = await this.store.getHistory({ ...scope, checkpointId, channels: [...channels] });
    const byId = new Map(ancestors.map((a) => [a.checkpointId, a]));
    const remaining = new Set(channels);
    const perAncestor: Array<Map<string, CheckpointPendingWrite[]>> = [];
    const seeds = new Map<string, unknown>();
    let current = ancestors[0];
    const visited = new Set<string>();
    while (current && remaining.size > 0 && !visited.has(current.checkpointId)) {
      visited.add(current.checkpointId);
      const collected = new Map<string, CheckpointPendingWrite[]>();
      for (const write of sortWrites(current.writes)) {
        if (!remaining.has(write.channel)) continue;
        const value = await this.load(scope, write.value, `write "${write.channel}" of task ${write.taskId}`);
        const list = collected.get(write.channel) ?? [];
        list.push([write.taskId, write.channel, value]);
        collected.set(write.channel, list);
      }
      perAncestor.push(collected);
      const blobs = new Map(current.blobs.map((b) => [`${b.channel}\u0000${b.version}`, b]));
      for (const channel of [...remaining]) {
        const version = current.channelVersions[channel];
        const blob = version === undefined ? undefined : blobs.get(`${channel}\u0000${version}`);
        if (blob && blob.value.type !== "empty") {
          seeds.set(channel, await this.loadBlob(scope, blob));
          remaining.delete(channel);
        }
      }
      current = current.parentCheckpointId === undefined ? undefined : byId.get(current.parentCheckpointId);
    }
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

  private async storeWrites(scope: Scope, checkpointId: string, writes: PendingWrite[], taskId: string, taskPath: string): Promise<void> {
    if (!Array.isArray(writes)) throw new InvalidConfigError("writes", `putWrites(): writes must be an array of [channel, value] pairs.`);
    const chunks: ChunkRecord[] = [];
    const records: WriteRecord[] = [];
    for (let i = 0; i < writes.length; i += 1) {
      const write = writes[i];
      if (!Array.isArray(write) || typeof write[0] !== "string") {
        throw new InvalidConfigError("writes", `putWrites(): write ${i} of task ${taskId} is not a [channel, value] pair.`);
      }
      const [channel, value] = write;
      checkIdentifier(channel, ID_RULES.channel, "putWrites()");
      const serialized = await serializeValue(this.serde, value, `write to channel "${channel}" (task ${taskId})`, this.maxValueBytes);
      records.push({
        taskId,
        idx: WRITES_IDX_MAP[channel] ?? i,
        channel,
        value: splitIfLarge(serialized, this.capabilities.maxItemBytes, chunks),
        taskPath,
      });
    }
    if (records.length === 0) return;
    // A batch of only special channels replaces what is stored (an INTERRUPT becomes a RESUME);
    // anything else keeps the first write of a (task, idx), so a retried task changes nothing.
    const mode = records.every((r) => SPECIAL_CHANNELS.has(r.channel)) ? "upsert" : "ignore";
    await this.store.putWrites({ ...scope, checkpointId, writes: records, chunks, mode });
  }

  private async toTuple(stored: StoredCheckpoint): Promise<CheckpointTuple> {
    const { record } = stored;
    const scope = { threadId: record.threadId, checkpointNs: record.checkpointNs };
    const checkpoint = (await this.load(scope, record.checkpoint, `checkpoint ${record.checkpointId}`)) as Checkpoint;
    const metadata = (await this.load(scope, record.metadata, `metadata of checkpoint ${record.checkpointId}`)) as CheckpointMetadata;
    const blobs = new Map(stored.blobs.map((b) => [`${b.channel}\u0000${b.version}`, b]));
    const channelValues: Record<string, unknown> = {};
    for (const [channel, version] of Object.entries(checkpoint.channel_versions ?? {})) {
      const blob = blobs.get(`${channel}\u0000${String(version)}`);
      if (!blob || blob.value.type === "empty") continue;
      channelValues[channel] = await this.loadBlob(scope, blob);
    }
    checkpoint.channel_values = channelValues;
    const pendingWrites: CheckpointPendingWrite[] = [];
    for (const write of sortWrites(stored.writes)) {
      pendingWrites.push([write.taskId, write.channel, await this.load(scope, write.value, `write "${write.channel}" of task ${write.taskId}`)]);
    }
    if (checkpoint.v < 4 && record.parentCheckpointId !== undefined) {
      await this.migratePendingSends(checkpoint, scope, record.parentCheckpointId);
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
    const sends: unknown[] = [];
    for (const write of sortWrites(parent?.writes ?? [])) {
      if (write.channel === TASKS) sends.push(await this.load(scope, write.value, `pending send of task ${write.taskId}`));
    }
    checkpoint.channel_values ??= {};
    (checkpoint.channel_values as Record<string, unknown>)[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }

  private async load(scope: Scope, value: SerializedValue, target: string): Promise<unknown> {
    return deserializeValue(this.serde, await this.reassemble(scope, value, target), target);
  }

  private async reassemble(scope: Scope, value: SerializedValue, target: string): Promise<SerializedValue> {
    if (!value.chunkRef) return value;
    return joinChunks(value, await this.store.getChunks(scope.threadId, [value.chunkRef.hash]), target);
  }

  /**
   * Loads a channel blob. A blob with a `baseVersion` holds a delta: the items appended to the value
   * at that earlier version, so the chain is resolved back to a whole value.
   */
  private async loadBlob(scope: Scope, blob: BlobRecord): Promise<unknown> {
    const target = `channel "${blob.channel}" at version ${blob.version}`;
    if (blob.baseVersion === undefined) return this.load(scope, blob.value, target);
    const chain: BlobRecord[] = [blob];
    const seen = new Set([blob.version]);
    let base: string | undefined = blob.baseVersion;
    while (base !== undefined) {
      if (seen.has(base)) throw new CorruptRecordError(`${target} has a delta chain that loops at version ${base}`);
      seen.add(base);
      const [found] = await this.store.getBlobs(scope, [{ channel: blob.channel, version: base }]);
      if (!found) throw new CorruptRecordError(`${target} is a delta over version ${base}, which is missing`);
      chain.push(found);
      base = found.baseVersion;
    }
    let value = await this.load(scope, chain[chain.length - 1]!.value, target);
    for (let i = chain.length - 2; i >= 0; i -= 1) {
      const delta = await this.load(scope, chain[i]!.value, target);
      if (!Array.isArray(value) || !Array.isArray(delta)) {
        throw new CorruptRecordError(`${target} is a delta, but its base or delta is not a list`);
      }
      value = [...value, ...delta];
    }
    return value;
  }
}

/** Pending writes in `writesSortKey` order: task path, then task id, then index. */
export function sortWrites(writes: WriteRecord[]): WriteRecord[] {
  return writes
    .map((w) => ({ w, key: writesSortKey(w.taskPath, w.taskId, w.idx) }))
    .sort((a, b) => compareWritesSortKeys(a.key, b.key))
    .map(({ w }) => w);
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
