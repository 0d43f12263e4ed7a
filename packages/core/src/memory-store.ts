/**
 * The reference store: the whole contract in plain maps, used to test core and the conformance suite.
 *
 * @module
 */
import { LeaseLostError, StoreClosedError } from "./errors.js";
import { THREAD_STATES } from "./store.js";
import type {
  BlobRecord,
  Lease,
  LeaseClaim,
  LeaseFence,
  LeaseState,
  ListThreadsQuery,
  PatchThreadStatusRequest,
  ThreadState,
  ThreadStatusRecord,
  CheckpointRecord,
  CheckpointStore,
  ChunkRecord,
  HistoryAncestor,
  HistoryQuery,
  HistoryResult,
  ListCheckpointsQuery,
  PutCheckpointRequest,
  PutWritesRequest,
  SerializedValue,
  StoreCapabilities,
  StoreCommandListener,
  StoredCheckpoint,
  ThreadScope,
  WriteRecord,
  DeleteRecordsRequest,
  ThreadRecords,
} from "./store.js";
import { plainJsonCopy } from "./serialization.js";
import { applyPatchToRecord, recordOfWrite } from "./thread-status.js";

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Pretend each record can hold at most this many bytes, so that core splits larger values into
   * chunks (useful to test chunking without a database that has an item limit). Default: no limit.
   */
  maxItemBytes?: number;
}

interface ThreadData {
  /** namespace → checkpoint id → record */
  checkpoints: Map<string, Map<string, CheckpointRecord>>;
  /** namespace → channel → version → blob */
  blobs: Map<string, Map<string, Map<string, BlobRecord>>>;
  /** namespace → checkpoint id → `taskId\0idx` → write */
  writes: Map<string, Map<string, Map<string, WriteRecord>>>;
  /** hash → index → chunk */
  chunks: Map<string, Map<number, ChunkRecord>>;
  /** namespace → greatest checkpoint id, so "latest" needs no scan */
  latest: Map<string, string>;
}

interface LeaseRow {
  token: number;
  workerId: string;
  expiresAt: number;
  released: boolean;
}

/**
 * Keys `(updatedAt, threadId)` of one state, kept sorted, so that listing a page costs a binary
 * search plus the page (the index a database would keep).
 */
class SortedKeys {
  private readonly keys: Array<[number, string]> = [];

  private position(updatedAt: number, threadId: string): number {
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const [u, t] = this.keys[mid]!;
      if (u < updatedAt || (u === updatedAt && t < threadId)) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  add(updatedAt: number, threadId: string): void {
    this.keys.splice(this.position(updatedAt, threadId), 0, [updatedAt, threadId]);
  }

  remove(updatedAt: number, threadId: string): void {
    const at = this.position(updatedAt, threadId);
    const key = this.keys[at];
    if (key && key[0] === updatedAt && key[1] === threadId) this.keys.splice(at, 1);
  }

  /** Up to `limit` keys after `after`, with `updatedAt < olderThan`. */
  page(after: { updatedAt: number; threadId: string } | undefined, olderThan: number | undefined, limit: number): Array<[number, string]> {
    const out: Array<[number, string]> = [];
    let i = after ? this.position(after.updatedAt, after.threadId) : 0;
    if (after && this.keys[i]?.[0] === after.updatedAt && this.keys[i]?.[1] === after.threadId) i += 1;
    for (; i < this.keys.length && out.length < limit; i += 1) {
      const key = this.keys[i]!;
      if (olderThan !== undefined && !(key[0] < olderThan)) break;
      out.push(key);
    }
    return out;
  }
}

/**
 * An in-memory {@link CheckpointStore}. Nothing outlives the process (`capabilities.persistent` is
 * false), so the crash-injection suite reports it "not applicable".
 *
 * It keeps its own copy of every value it is given. Records it returns are new objects, but their
 * `data` bytes are the store's own, as with a zero-copy read: treat them as read-only (the saver
 * only deserializes them). Copying them on every read cost a third of a `getTuple` through core.
 *
 * @example
 * ```ts
 * const checkpointer = new ResumableSaver(new MemoryStore());
 * ```
 */
export class MemoryStore implements CheckpointStore {
  readonly capabilities: Partial<StoreCapabilities>;
  private readonly threads = new Map<string, ThreadData>();
  /** Survive deleteThread, so that tokens never go back. */
  private readonly leases = new Map<string, LeaseRow>();
  private readonly statuses = new Map<string, ThreadStatusRecord>();
  private readonly statusIndex = new Map<ThreadState, SortedKeys>(THREAD_STATES.map((state) => [state, new SortedKeys()]));
  private listener: StoreCommandListener | undefined;
  private closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    this.capabilities = {
      maxItemBytes: options.maxItemBytes ?? Number.POSITIVE_INFINITY,
      nativeMetadataFilter: false,
      persistent: false,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      leases: true,
      threadStatus: true,
      retention: true,
    };
  }

  async setup(): Promise<void> {
    this.check("setup");
  }

  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    this.check("putCheckpoint");
    // Everything below is synchronous: the fence check and the writes are one atomic step.
    this.checkFence(request.record.threadId, request.fence, "putCheckpoint");
    const thread = this.thread(request.record.threadId, true);
    const ns = request.record.checkpointNs;
    for (const chunk of request.chunks) putChunk(thread, chunk);
    const blobs = getOrCreate(thread.blobs, ns, () => new Map<string, Map<string, BlobRecord>>());
    for (const blob of request.blobs) {
      const versions = getOrCreate(blobs, blob.channel, () => new Map<string, BlobRecord>());
      if (!versions.has(blob.version)) versions.set(blob.version, cloneBlob(blob));
    }
    getOrCreate(thread.checkpoints, ns, () => new Map<string, CheckpointRecord>()).set(request.record.checkpointId, cloneRecord(request.record));
    const latest = thread.latest.get(ns);
    if (latest === undefined || request.record.checkpointId > latest) thread.latest.set(ns, request.record.checkpointId);
    if (request.status) {
      const threadId = request.record.threadId;
      const next = recordOfWrite(threadId, request.record.checkpointId, request.status, this.statuses.get(threadId));
      if (next) this.setStatus(threadId, next);
    }
  }

  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check("putWrites");
    this.checkFence(request.threadId, request.fence, "putWrites");
    const thread = this.thread(request.threadId, true);
    for (const chunk of request.chunks) putChunk(thread, chunk);
    const byCheckpoint = getOrCreate(thread.writes, request.checkpointNs, () => new Map<string, Map<string, WriteRecord>>());
    const writes = getOrCreate(byCheckpoint, request.checkpointId, () => new Map<string, WriteRecord>());
    for (const write of request.writes) {
      const key = `${write.taskId}\u0000${write.idx}`;
      if (request.mode === "ignore" && writes.has(key)) continue;
      writes.set(key, { ...write, value: cloneValue(write.value) });
    }
    if (request.status) this.patchStatus(request.threadId, request.status);
  }

  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    this.check("getCheckpoint");
    const thread = this.threads.get(scope.threadId);
    const checkpoints = thread?.checkpoints.get(scope.checkpointNs);
    if (!thread || !checkpoints) return undefined;
    const id = scope.checkpointId ?? thread.latest.get(scope.checkpointNs);
    const record = id === undefined ? undefined : checkpoints.get(id);
    return record ? this.stored(thread, record) : undefined;
  }

  async *listCheckpoints(query: ListCheckpointsQuery): AsyncIterable<StoredCheckpoint> {
    this.check("listCheckpoints");
    const threadIds = query.threadId !== undefined ? [query.threadId] : [...this.threads.keys()].sort();
    let remaining = query.limit;
    for (const threadId of threadIds) {
      const thread = this.threads.get(threadId);
      if (!thread) continue;
      const namespaces = query.checkpointNs !== undefined ? [query.checkpointNs] : [...thread.checkpoints.keys()].sort();
      for (const ns of namespaces) {
        const checkpoints = thread.checkpoints.get(ns);
        if (!checkpoints) continue;
        const ids = [...checkpoints.keys()].sort().reverse();
        for (const id of ids) {
          if (query.checkpointId !== undefined && id !== query.checkpointId) continue;
          if (query.before !== undefined && !(id < query.before)) continue;
          const record = checkpoints.get(id);
          if (!record) continue; // deleted while iterating
          if (remaining !== undefined) {
            if (remaining <= 0) return;
            remaining -= 1;
          }
          yield this.stored(thread, record);
        }
      }
    }
  }

  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    this.check("getHistory");
    const thread = this.threads.get(query.threadId);
    const checkpoints = thread?.checkpoints.get(query.checkpointNs);
    const ancestors: HistoryAncestor[] = [];
    if (!thread || !checkpoints) return { ancestors };
    const wanted = new Set(query.channels);
    // Channels still looking for their seed; the walk stops once every one has found it.
    const unseeded = new Set(query.channels);
    const blobs = thread.blobs.get(query.checkpointNs);
    let id = checkpoints.get(query.checkpointId)?.parentCheckpointId;
    const seen = new Set<string>();
    while (id !== undefined && !seen.has(id) && unseeded.size > 0) {
      seen.add(id);
      const record = checkpoints.get(id);
      if (!record) break;
      const ancestorBlobs: BlobRecord[] = [];
      for (const channel of wanted) {
        const version = record.channelVersions[channel];
        if (version === undefined) continue;
        const blob = blobs?.get(channel)?.get(version);
        ancestorBlobs.push(...channelBlobs(blobs, channel, version, record.deltaRoots?.[channel]));
        if (blob && blob.value.type !== "empty") unseeded.delete(channel);
      }
      const writes = [...(thread.writes.get(query.checkpointNs)?.get(id)?.values() ?? [])]
        .filter((w) => wanted.has(w.channel))
        .map((w) => ({ ...w, value: readValue(w.value) }));
      const ancestor: HistoryAncestor = {
        checkpointId: id,
        parentCheckpointId: record.parentCheckpointId,
        channelVersions: { ...record.channelVersions },
        blobs: ancestorBlobs,
        writes,
      };
      if (record.deltaRoots) ancestor.deltaRoots = { ...record.deltaRoots };
      ancestors.push(ancestor);
      id = record.parentCheckpointId;
    }
    return { ancestors, chunks: referencedChunks(thread, ancestors.flatMap((a) => [...a.blobs.map((b) => b.value), ...a.writes.map((w) => w.value)])) };
  }

  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    this.check("getChunks");
    const thread = this.threads.get(threadId);
    if (!thread) return [];
    return [...new Set(hashes)].flatMap((hash) => [...(thread.chunks.get(hash)?.values() ?? [])].map((c) => ({ ...c })));
  }

  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    this.check("getBlobs");
    const blobs = this.threads.get(scope.threadId)?.blobs.get(scope.checkpointNs);
    const out: BlobRecord[] = [];
    for (const { channel, version } of keys) {
      const blob = blobs?.get(channel)?.get(version);
      if (blob) out.push(readBlob(blob));
    }
    return out;
  }

  async deleteThread(threadId: string): Promise<void> {
    this.check("deleteThread");
    this.threads.delete(threadId);
    this.setStatus(threadId, undefined);
  }

  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    this.check("listThreadRecords");
    const out: ThreadRecords = { checkpoints: [], blobs: [], writes: [], chunks: [] };
    const thread = this.threads.get(threadId);
    if (!thread) return out;
    for (const checkpoints of thread.checkpoints.values()) for (const record of checkpoints.values()) out.checkpoints.push(readRecord(record));
    for (const [checkpointNs, channels] of thread.blobs) {
      for (const [channel, versions] of channels) {
        for (const [version, blob] of versions) {
          out.blobs.push({
            checkpointNs,
            channel,
            version,
            empty: blob.value.type === "empty",
            bytes: blob.value.data.byteLength,
            ...(blob.baseVersion !== undefined ? { baseVersion: blob.baseVersion } : {}),
            ...(blob.value.refs ? { refs: [...blob.value.refs] } : {}),
            ...(blob.value.chunkRef ? { chunkHash: blob.value.chunkRef.hash } : {}),
          });
        }
      }
    }
    for (const [checkpointNs, byCheckpoint] of thread.writes) {
      for (const [checkpointId, writes] of byCheckpoint) {
        for (const write of writes.values()) {
          out.writes.push({
            checkpointNs,
            checkpointId,
            taskId: write.taskId,
            idx: write.idx,
            channel: write.channel,
            bytes: write.value.data.byteLength,
            ...(write.value.refs ? { refs: [...write.value.refs] } : {}),
            ...(write.value.chunkRef ? { chunkHash: write.value.chunkRef.hash } : {}),
          });
        }
      }
    }
    for (const [hash, chunks] of thread.chunks) for (const chunk of chunks.values()) out.chunks.push({ hash, index: chunk.index, bytes: chunk.data.byteLength });
    return out;
  }

  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    this.check("deleteRecords");
    // Synchronous from here: the fence check and the removals are one atomic step.
    this.checkFence(request.threadId, request.fence, "deleteRecords");
    const thread = this.threads.get(request.threadId);
    if (thread) {
      for (const { checkpointNs, checkpointId } of request.checkpoints) {
        const checkpoints = thread.checkpoints.get(checkpointNs);
        checkpoints?.delete(checkpointId);
        thread.writes.get(checkpointNs)?.delete(checkpointId);
        if (checkpoints && thread.latest.get(checkpointNs) === checkpointId) {
          let latest: string | undefined;
          for (const id of checkpoints.keys()) if (latest === undefined || id > latest) latest = id;
          if (latest === undefined) thread.latest.delete(checkpointNs);
          else thread.latest.set(checkpointNs, latest);
        }
      }
      for (const { checkpointNs, channel, version } of request.blobs) thread.blobs.get(checkpointNs)?.get(channel)?.delete(version);
      for (const hash of request.chunks) thread.chunks.delete(hash);
    }
    if (request.status === null) {
      this.setStatus(request.threadId, undefined);
    } else if (request.status) {
      const next = recordOfWrite(request.threadId, request.status.checkpointId, request.status.write, undefined);
      if (next) this.setStatus(request.threadId, next);
    }
  }

  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    this.check("claimLease");
    const now = Date.now();
    const row = this.leases.get(claim.threadId);
    if (row && !row.released && row.workerId !== claim.workerId && row.expiresAt > now) return undefined;
    const next: LeaseRow = { token: (row?.token ?? 0) + 1, workerId: claim.workerId, expiresAt: now + claim.ttlMs, released: false };
    this.leases.set(claim.threadId, next);
    return { threadId: claim.threadId, workerId: claim.workerId, token: next.token, expiresAt: next.expiresAt };
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.check("renewLease");
    this.checkFence(lease.threadId, lease, "renewLease");
    const row = this.leases.get(lease.threadId)!;
    row.expiresAt = Date.now() + ttlMs;
    return { threadId: lease.threadId, workerId: row.workerId, token: row.token, expiresAt: row.expiresAt };
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.check("releaseLease");
    const row = this.leases.get(lease.threadId);
    if (!row || row.token !== lease.token) return;
    row.released = true;
  }

  async getLease(threadId: string): Promise<LeaseState | undefined> {
    this.check("getLease");
    const row = this.leases.get(threadId);
    if (!row) return undefined;
    return { threadId, workerId: row.workerId, token: row.token, expiresAt: row.expiresAt, released: row.released };
  }

  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    this.check("getThreadStatus");
    const record = this.statuses.get(threadId);
    return record ? cloneStatus(record) : undefined;
  }

  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    this.check("listThreads");
    const keys: Array<[number, string]> = [];
    for (const state of query.states ?? THREAD_STATES) keys.push(...this.statusIndex.get(state)!.page(query.after, query.olderThan, query.limit));
    keys.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    return keys.slice(0, query.limit).map(([, threadId]) => cloneStatus(this.statuses.get(threadId)!));
  }

  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    this.check("patchThreadStatus");
    this.checkFence(request.threadId, request.fence, "patchThreadStatus");
    const next = this.patchStatus(request.threadId, request.patch);
    return next ? cloneStatus(next) : undefined;
  }

  instrument(listener: StoreCommandListener | undefined): void {
    this.listener = listener;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private check(command: string): void {
    if (this.closed) throw new StoreClosedError("MemoryStore");
    this.listener?.({ command });
  }

  /** Throws {@link LeaseLostError} unless the thread's lease still carries the fence's token. */
  private checkFence(threadId: string, fence: LeaseFence | undefined, operation: string): void {
    if (!fence) return;
    const row = this.leases.get(threadId);
    if (row && row.token === fence.token && !row.released) return;
    throw new LeaseLostError(threadId, fence.token, row ? { token: row.token, holder: row.released ? null : row.workerId } : {}, operation);
  }

  private patchStatus(threadId: string, patch: PatchThreadStatusRequest["patch"]): ThreadStatusRecord | undefined {
    const current = this.statuses.get(threadId);
    const next = current ? applyPatchToRecord(current, patch) : undefined;
    if (next) this.setStatus(threadId, next);
    return next;
  }

  /** Replaces (or with `undefined` removes) a thread's status and moves it in the index. */
  private setStatus(threadId: string, record: ThreadStatusRecord | undefined): void {
    const current = this.statuses.get(threadId);
    if (current) this.statusIndex.get(current.state)!.remove(current.updatedAt, threadId);
    if (!record) {
      this.statuses.delete(threadId);
      return;
    }
    const stored = cloneStatus(record);
    this.statuses.set(threadId, stored);
    this.statusIndex.get(stored.state)!.add(stored.updatedAt, threadId);
  }

  private thread(threadId: string, create: true): ThreadData {
    return getOrCreate(this.threads, threadId, () => ({ checkpoints: new Map(), blobs: new Map(), writes: new Map(), chunks: new Map(), latest: new Map() }));
  }

  private stored(thread: ThreadData, record: CheckpointRecord): StoredCheckpoint {
    const blobs = thread.blobs.get(record.checkpointNs);
    const found: BlobRecord[] = [];
    for (const [channel, version] of Object.entries(record.channelVersions)) {
      found.push(...channelBlobs(blobs, channel, version, record.deltaRoots?.[channel]));
    }
    const writes = [...(thread.writes.get(record.checkpointNs)?.get(record.checkpointId)?.values() ?? [])].map((w) => ({
      ...w,
      value: readValue(w.value),
    }));
    const chunks = referencedChunks(thread, [...found.map((b) => b.value), ...writes.map((w) => w.value)]);
    return { record: readRecord(record), blobs: found, writes, chunks };
  }
}

/**
 * The blob of a channel at a version, or, when the checkpoint names a delta root for it, every blob
 * of the channel from that root to the version (the delta chain is among them).
 */
function channelBlobs(blobs: Map<string, Map<string, BlobRecord>> | undefined, channel: string, version: string, root: string | undefined): BlobRecord[] {
  const versions = blobs?.get(channel);
  if (!versions) return [];
  if (root === undefined) {
    const blob = versions.get(version);
    return blob ? [readBlob(blob)] : [];
  }
  const out: BlobRecord[] = [];
  for (const [v, blob] of versions) if (v >= root && v <= version) out.push(readBlob(blob));
  return out;
}

/** Every chunk (all indices) of the hashes the values reference, shared pieces and split values alike. */
function referencedChunks(thread: ThreadData, values: SerializedValue[]): ChunkRecord[] {
  const hashes = new Set<string>();
  for (const value of values) {
    for (const hash of value.refs ?? []) hashes.add(hash);
    if (value.chunkRef) hashes.add(value.chunkRef.hash);
  }
  return [...hashes].flatMap((hash) => [...(thread.chunks.get(hash)?.values() ?? [])].map((c) => ({ ...c })));
}

function putChunk(thread: ThreadData, chunk: ChunkRecord): void {
  const chunks = getOrCreate(thread.chunks, chunk.hash, () => new Map<number, ChunkRecord>());
  if (!chunks.has(chunk.index)) chunks.set(chunk.index, { ...chunk, data: copyBytes(chunk.data) });
}

function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

/**
 * A copy of bytes the store was given (a Buffer's own slice would be a view), as a plain `Uint8Array`
 * (a `bytes` value reads back as what was stored, not as a Buffer). `Buffer.from` copies small arrays
 * into Node's shared pool: 0.4 us for 1 KB, where `Uint8Array.prototype.slice` allocates an ArrayBuffer
 * per call (1.4 us).
 */
function copyBytes(data: Uint8Array): Uint8Array {
  const copy = Buffer.from(data);
  return new Uint8Array(copy.buffer, copy.byteOffset, copy.byteLength);
}

function cloneValue(value: SerializedValue, copy = true): SerializedValue {
  // Built field by field: object spread with conditional spreads costs several times more per call.
  const out: SerializedValue = { type: value.type, data: copy ? copyBytes(value.data) : value.data };
  if (value.chunkRef) out.chunkRef = { ...value.chunkRef };
  if (value.refs) out.refs = value.refs.slice();
  return out;
}

/** A stored value as reads return it: new objects around the store's own bytes (see {@link MemoryStore}). */
function readValue(value: SerializedValue): SerializedValue {
  return cloneValue(value, false);
}

function cloneBlob(blob: BlobRecord, copy = true): BlobRecord {
  return { ...blob, value: cloneValue(blob.value, copy) };
}

function readBlob(blob: BlobRecord): BlobRecord {
  return cloneBlob(blob, false);
}

function readRecord(record: CheckpointRecord): CheckpointRecord {
  return cloneRecord(record, false);
}

function cloneRecord(record: CheckpointRecord, copy = true): CheckpointRecord {
  return {
    ...record,
    checkpoint: cloneValue(record.checkpoint, copy),
    metadata: cloneValue(record.metadata, copy),
    metadataJson: copyJson(record.metadataJson),
    channelVersions: { ...record.channelVersions },
    ...(record.deltaRoots ? { deltaRoots: { ...record.deltaRoots } } : {}),
  };
}

function cloneStatus(record: ThreadStatusRecord): ThreadStatusRecord {
  const out: ThreadStatusRecord = { ...record };
  if (record.interrupts) out.interrupts = copyJson(record.interrupts);
  return out;
}

/**
 * A copy of JSON data, as `JSON.parse(JSON.stringify(value))` makes it (own `"__proto__"` keys
 * included) but without the text in between: a few times faster on the small objects metadata and
 * interrupts are. Anything a JSON round trip would change (`undefined`, `-0`, a `Date`, a class
 * instance...) takes the round trip itself, so the result is the same either way.
 */
function copyJson<T>(value: T): T {
  return (plainJsonCopy(value, false) ?? JSON.parse(JSON.stringify(value))) as T;
}
