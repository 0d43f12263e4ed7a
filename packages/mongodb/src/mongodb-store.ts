/**
 * The MongoDB {@link CheckpointStore}: five collections, atomic without multi-document transactions.
 *
 * @module
 */
import {
  InvalidConfigError,
  LeaseLostError,
  StoreClosedError,
  StoreNotSetUpError,
  ValueTooLargeError,
  formatBytes,
  type BlobRecord,
  type CheckpointStore,
  type ChunkRecord,
  type DeleteRecordsRequest,
  type HistoryAncestor,
  type HistoryQuery,
  type HistoryResult,
  type Lease,
  type LeaseClaim,
  type LeaseFence,
  type LeaseState,
  type ListCheckpointsQuery,
  type ListThreadsQuery,
  type PatchThreadStatusRequest,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type StoreCapabilities,
  type StoreCommandListener,
  type StoredCheckpoint,
  type SerializedValue,
  type ThreadScope,
  type ThreadRecords,
  type ThreadStatusRecord,
  type WriteRecord,
} from "@resumable/core";
import type { AnyBulkWriteOperation, Collection, Db, Document, Filter, MongoClient, MongoClientOptions } from "mongodb";

import { connectClient } from "./client.js";
import {
  fromBlobDoc,
  fromCheckpointDoc,
  fromChunkDoc,
  fromWriteDoc,
  inlineBytes,
  keyId,
  metadataKey,
  rootsOf,
  toBlobDoc,
  toCheckpointDoc,
  toChunkDoc,
  toWriteDoc,
  versionsOf,
  type BlobDoc,
  type CheckpointDoc,
  type ChunkDoc,
  type PendingWrite,
  type WriteDoc,
} from "./documents.js";
import { checkCollectionPrefix, checkDatabaseName, checkId, onlyDuplicateKeys, translateError } from "./errors.js";
import { ManyWorkers, REGISTER_INDEX, STATUS_INDEX, checkRemovalStatus, newOp, type LeaseDoc } from "./many-workers.js";
import { blobKeyOf, chunkKeyOf, mapAll, removalFilters, writeHeadOf, writeKeyOf } from "./retention.js";
import { ThreadExpiry, live, type ThreadDoc } from "./thread-expiry.js";

/** Options of {@link MongoDBStore}. */
export interface MongoDBStoreOptions {
  /** The database; default the one named in the client's URL (the driver's default, `test`, without one). */
  dbName?: string;
  /** Prefix of the collection names (`<prefix>checkpoints`, ...). Default `"resumable_"`. */
  collectionPrefix?: string;
  /**
   * Values larger than this many bytes are split by core into chunks of this size, in their own
   * collection (declared as `capabilities.maxItemBytes`). Default 1 MiB (GridFS uses 255 KiB): documents
   * stay small, and a checkpoint document, which holds the checkpoint and its metadata (each up to this
   * size) and the metadata's JSON, stays far below the 16 MB document limit. At most 8 MiB.
   */
  chunkBytes?: number;
  /** Checkpoints fetched per page by `listCheckpoints`. Default 50. */
  pageSize?: number;
  /**
   * Threads expire this many seconds after their last write (`putCheckpoint`, `putWrites`), as a whole:
   * see {@link MongoDBStore.deleteExpiredThreads}. Default: never.
   */
  ttlSeconds?: number;
  /**
   * Several worker processes on one database (default `false`): thread leases with fencing tokens and
   * a status per thread (`capabilities.leases` and `capabilities.threadStatus`, what
   * `@resumable/recovery` needs), without transactions. A lease document per thread in
   * `<prefix>leases` is the commit point of every fenced write and holds the thread's status;
   * `setup()` adds its index `(state, updated_at, _id)`. Costs, per fenced write (and per root
   * checkpoint, whose status it carries), two more requests (the commit and the untag); reads cost
   * nothing more unless they meet a record whose commit is under way or was cut short. Off, nothing
   * changes and no request is added.
   */
  manyWorkers?: boolean;
}

/** Options of {@link MongoDBStore.connect}: store options plus `MongoClient` settings. */
export interface MongoDBConnectOptions extends MongoDBStoreOptions {
  /** Passed to `new MongoClient(url, ...)`; `serverSelectionTimeoutMS` defaults to 10000 here. */
  client?: MongoClientOptions;
}

/** Version of the collection layout; `setup()` records it, a newer one is refused. */
export const LAYOUT_VERSION = 1;
const STORE_NAME = "MongoDBStore";
const DEFAULT_CHUNK_BYTES = 1024 * 1024;
const MAX_CHUNK_BYTES = 8 * 1024 * 1024;
/** MongoDB's document limit (`maxBsonObjectSize`), less room for field names and ids. */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024 - 64 * 1024;
const NEWEST_FIRST = { thread_id: -1, checkpoint_ns: -1, checkpoint_id: -1 } as const;
/**
 * Reads that return every match: a first batch as large as the server allows (16 MB), rather than
 * the driver's 101 documents and a `getMore` round trip for the rest.
 */
const ALL = { batchSize: 100_000 } as const;

/** The collections, by role. */
export interface MongoDBCollections {
  checkpoints: Collection<CheckpointDoc>;
  blobs: Collection<BlobDoc>;
  writes: Collection<WriteDoc>;
  chunks: Collection<ChunkDoc>;
  /** One document per thread with its expiry (only used with `ttlSeconds`), `_id` the thread id. */
  threads: Collection<ThreadDoc>;
  /** With `manyWorkers`: one document per thread with its lease, committed fenced calls and status (see many-workers.ts). */
  leases: Collection<LeaseDoc>;
  /** The layout version, `{ _id: "layout", version }`. */
  meta: Collection<{ _id: string; version: number }>;
}

/**
 * A {@link CheckpointStore} on MongoDB (or a server speaking its protocol, such as FerretDB), through
 * the `mongodb` driver, without multi-document transactions (they need a replica set).
 *
 * - `putCheckpoint` writes the chunks and blobs first and the checkpoint document last: the checkpoint
 *   document is the commit point, so a reader never sees a checkpoint without its parts, and a crash
 *   leaves at most unreferenced parts, which `deleteThread` removes with the rest.
 * - Blobs, chunks and writes are keyed by unique indexes: insert-or-ignore is an unordered insert whose
 *   duplicate-key errors are dropped; upserts are keyed replaces.
 * - `getCheckpoint` is two round trips whatever the size of the thread (the checkpoint and its writes,
 *   then its blobs; or the newest checkpoint, then its blobs and writes in parallel).
 *
 * @example
 * ```ts
 * const store = await MongoDBStore.connect("mongodb://localhost:27017/app");
 * await store.setup();
 * const checkpointer = new ResumableSaver(store);
 * ```
 */
export class MongoDBStore implements CheckpointStore {
  readonly capabilities: Partial<StoreCapabilities>;
  /** The client queries go through. */
  readonly client: MongoClient;
  /** The database. */
  readonly db: Db;
  readonly collections: MongoDBCollections;
  private readonly pageSize: number;
  /** With `ttlSeconds`: the threads' expiry. */
  private readonly expiry: ThreadExpiry | undefined;
  /** Leases and status (used by reads even without `manyWorkers`, should they meet a tagged record). */
  private readonly workers: ManyWorkers;
  private readonly manyWorkers: boolean;
  private ownsClient = false;
  private listener: StoreCommandListener | undefined;
  private closed = false;
  private ready: Promise<void> | undefined;
  /**
   * Per thread, the checkpoint documents its last listing found tagged by a fenced put never committed
   * (invisible to every read), for its next removal to take along: see {@link listThreadRecords}.
   */
  private readonly uncommitted = new Map<string, Array<{ _id: string; op: string }>>();

  /** @param client A `MongoClient` (left open by `close()`: the caller owns it). */
  constructor(client: MongoClient, options: MongoDBStoreOptions = {}) {
    this.client = client;
    this.db = options.dbName === undefined ? client.db() : client.db(checkDatabaseName(options.dbName));
    const prefix = checkCollectionPrefix(options.collectionPrefix ?? "resumable_");
    const c = <T extends Document>(name: string) => this.db.collection<T>(`${prefix}${name}`);
    this.collections = {
      checkpoints: c("checkpoints"),
      blobs: c("blobs"),
      writes: c("writes"),
      chunks: c("chunks"),
      threads: c("threads"),
      leases: c("leases"),
      meta: c("meta"),
    };
    this.manyWorkers = options.manyWorkers === true;
    this.workers = new ManyWorkers(this.collections.leases, (command, operation, op) => this.run(command, operation, op));
    this.pageSize = positiveInteger(options.pageSize, "pageSize", 50, 10_000);
    if (options.ttlSeconds !== undefined) {
      const ttlMs = positiveInteger(options.ttlSeconds, "ttlSeconds", 0, 10 * 365 * 86_400) * 1000;
      this.expiry = new ThreadExpiry(this.collections.threads, ttlMs, (command, operation, op) => this.run(command, operation, op), (id, op) =>
        this.deleteThreadData(id, op),
      );
    }
    this.capabilities = {
      maxItemBytes: positiveInteger(options.chunkBytes, "chunkBytes", DEFAULT_CHUNK_BYTES, MAX_CHUNK_BYTES),
      nativeMetadataFilter: true,
      persistent: true,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      retention: true,
      ...(this.manyWorkers ? { leases: true, threadStatus: true } : {}),
    };
  }

  /**
   * Creates a store with its own `MongoClient` for a `mongodb://` or `mongodb+srv://` URL, connected;
   * `close()` closes that client. Does not create collections: call `setup()`.
   */
  static async connect(url: string, options: MongoDBConnectOptions = {}): Promise<MongoDBStore> {
    const client = await connectClient(url, options.client);
    const store = new MongoDBStore(client, options);
    store.ownsClient = true;
    return store;
  }

  instrument(listener: StoreCommandListener | undefined): void {
    this.listener = listener;
  }

  /**
   * Creates the collections' indexes (unique on each record's key) and records the layout version.
   * Idempotent, and safe to run from several processes at once (creating an existing index is a no-op).
   */
  async setup(): Promise<void> {
    this.check();
    const { checkpoints, blobs, writes, chunks, threads, leases, meta } = this.collections;
    const unique = { unique: true };
    await this.run("createIndexes", "setup", () =>
      Promise.all([
        // One index per command: FerretDB 1.24 panics on a createIndexes of several existing indexes.
        checkpoints.createIndex({ thread_id: 1, checkpoint_ns: 1, checkpoint_id: -1 }, { name: "thread_ns_checkpoint", ...unique }),
        checkpoints.createIndex({ metadata_kv: 1 }, { name: "metadata_kv" }),
        blobs.createIndex({ thread_id: 1, checkpoint_ns: 1, channel: 1, version: 1 }, { name: "thread_ns_channel_version", ...unique }),
        writes.createIndex({ thread_id: 1, checkpoint_ns: 1, checkpoint_id: 1, task_id: 1, idx: 1 }, { name: "thread_ns_checkpoint_task_idx", ...unique }),
        chunks.createIndex({ thread_id: 1, hash: 1, idx: 1 }, { name: "thread_hash_idx", ...unique }),
        threads.createIndex({ expires_at: 1 }, { name: "expires_at" }),
        this.manyWorkers ? leases.createIndex({ thread_id: 1, seq: -1 }, { name: REGISTER_INDEX, ...unique }) : undefined,
        this.manyWorkers ? leases.createIndex({ state: 1, updated_at: 1, thread_id: 1 }, { name: STATUS_INDEX }) : undefined,
      ]),
    );
    const layout = await this.run("update meta", "setup", () =>
      // Setups racing on a new database may both try to insert the document: the loser retries.
      retryDuplicate(() => meta.findOneAndUpdate({ _id: "layout" }, { $max: { version: LAYOUT_VERSION } }, { upsert: true, returnDocument: "after" })),
    );
    if ((layout?.version ?? LAYOUT_VERSION) > LAYOUT_VERSION) throw this.newerLayout(layout!.version);
    this.ready = Promise.resolve();
  }

  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    this.check();
    const { record } = request;
    checkScope(record);
    checkId("checkpoint_id", record.checkpointId);
    if (record.parentCheckpointId !== undefined) checkId("parent checkpoint_id", record.parentCheckpointId);
    for (const [channel, version] of Object.entries(record.channelVersions)) {
      checkId(`channel name "${channel}"`, channel);
      checkId(`version of channel "${channel}"`, version);
    }
    const doc = toCheckpointDoc(record);
    const size =
      inlineBytes(record.checkpoint) + inlineBytes(record.metadata) + Buffer.byteLength(doc.metadata_json) + Buffer.byteLength(doc.channel_versions) + doc.metadata_kv.length * 40;
    if (size > MAX_DOCUMENT_BYTES) {
      throw new ValueTooLargeError(
        `The document of checkpoint ${record.checkpointId} (its checkpoint, metadata and metadata JSON)`,
        size,
        MAX_DOCUMENT_BYTES,
        `MongoDB documents hold at most 16 MB; keep large values out of the metadata (put them in state, where they are split into chunks).`,
      );
    }
    const blobs = dedupe(request.blobs, (b) => `${b.channel}\u0000${b.version}`).map((blob) => {
      checkId(`channel name "${blob.channel}"`, blob.channel);
      checkId(`version of channel "${blob.channel}"`, blob.version);
      if (blob.baseVersion !== undefined) checkId(`base version of channel "${blob.channel}"`, blob.baseVersion);
      return toBlobDoc(record.threadId, record.checkpointNs, blob);
    });
    // manyWorkers: a fenced put, or one carrying the thread's status, commits on the lease document.
    const op = this.manyWorkers && (request.fence !== undefined || request.status !== undefined) ? newOp() : undefined;
    if (op !== undefined) doc.tag = { token: request.fence?.token ?? 0, op };
    await this.ensureReady();
    await this.expiry?.touch(record.threadId, "putCheckpoint");
    // The parts first (in parallel: neither is visible without the other's commit point)...
    await Promise.all([
      this.insertChunks(record.threadId, request.chunks, "putCheckpoint"),
      blobs.length > 0 ? this.run("insert blobs", "putCheckpoint", () => insertOrIgnore(this.collections.blobs, blobs)) : undefined,
    ]);
    // ...then the checkpoint document, which makes them visible (tagged: once its op is committed).
    await this.run("upsert checkpoint", "putCheckpoint", () =>
      retryDuplicate(() => this.collections.checkpoints.replaceOne({ _id: doc._id }, doc, { upsert: true })),
    );
    if (op === undefined) return;
    await this.workers.commit(record.threadId, op, request.fence, request.status && { write: request.status, checkpointId: record.checkpointId }, "putCheckpoint");
    await this.run("update checkpoint untag", "putCheckpoint", () => this.collections.checkpoints.updateOne({ _id: doc._id, "tag.op": op }, { $unset: { tag: "" } }));
  }

  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check();
    checkScope(request);
    checkId("checkpoint_id", request.checkpointId);
    if (request.writes.length === 0 && request.chunks.length === 0) return;
    // One batch cannot write the same key twice: keep the write the mode says survives.
    const writes = dedupe(request.writes, (w) => `${w.taskId}\u0000${w.idx}`, request.mode === "upsert" ? "last" : "first").map((write) => {
      checkId("task id", write.taskId);
      checkId(`channel name "${write.channel}"`, write.channel);
      checkId("task path", write.taskPath);
      if (!Number.isInteger(write.idx)) throw new InvalidConfigError("idx", `MongoDBStore: a write's idx must be an integer, got ${String(write.idx)}.`);
      return toWriteDoc(request.threadId, request.checkpointNs, request.checkpointId, write);
    });
    await this.ensureReady();
    await this.expiry?.touch(request.threadId, "putWrites");
    // Chunks before the writes that reference them: a write is visible as soon as it is stored.
    await this.insertChunks(request.threadId, request.chunks, "putWrites");
    if (writes.length === 0) return;
    const collection = this.collections.writes;
    const fence = this.manyWorkers ? request.fence : undefined;
    if (fence !== undefined) {
      await this.putFencedWrites(request, writes, fence);
    } else if (request.mode === "ignore") {
      await this.run("insert writes", "putWrites", () => insertOrIgnore(collection, writes));
    } else {
      const ops: AnyBulkWriteOperation<WriteDoc>[] = writes.map((w) => ({
        replaceOne: { filter: { _id: w._id }, replacement: w, upsert: true },
      }));
      await this.run("upsert writes", "putWrites", () => retryDuplicate(() => collection.bulkWrite(ops, { ordered: false })));
    }
    if (request.status === undefined || !this.manyWorkers) return;
    try {
      await this.workers.patch(request.threadId, request.status, fence, "putWrites");
    } catch (error) {
      // The writes are committed; a status change the lease no longer allows is simply not applied.
      if (!(error instanceof LeaseLostError)) throw error;
    }
  }

  /**
   * The writes of a fenced call, each under `next` (readers keep seeing what was there, or nothing),
   * then the commit on the lease document, then the move into place. "ignore" keeps a key that holds a
   * visible write, and takes one that holds only a value never committed (its call was refused or cut
   * short, so no reader saw it): the retry of the task on the new lease must land.
   */
  private async putFencedWrites(request: PutWritesRequest, writes: WriteDoc[], fence: LeaseFence): Promise<void> {
    const { threadId } = request;
    const collection = this.collections.writes;
    const op = newOp();
    const pending = (w: WriteDoc): PendingWrite => ({ op, token: fence.token, channel: w.channel, task_path: w.task_path, value: w.value });
    const keys = (w: WriteDoc) => ({ thread_id: w.thread_id, checkpoint_ns: w.checkpoint_ns, checkpoint_id: w.checkpoint_id, task_id: w.task_id, idx: w.idx });
    if (request.mode === "upsert") {
      const ops: AnyBulkWriteOperation<WriteDoc>[] = writes.map((w) => ({
        updateOne: { filter: { _id: w._id }, update: { $set: { next: pending(w) }, $setOnInsert: keys(w) }, upsert: true },
      }));
      await this.run("upsert fenced writes", "putWrites", () => retryDuplicate(() => collection.bulkWrite(ops, { ordered: false })));
    } else {
      const taken = await this.run("insert fenced writes", "putWrites", () =>
        insertOrIgnore(collection, writes.map((w) => ({ _id: w._id, ...keys(w), next: pending(w) }) as WriteDoc)),
      );
      if (taken.length > 0) {
        const existing = await this.run("find writes", "putWrites", () =>
          collection.find({ _id: { $in: taken.map((w) => w._id) } }, { projection: { _id: 1, value: 1, "next.op": 1 }, ...ALL }).toArray(),
        );
        const unseen = existing.filter((d) => d.value === undefined && d.next !== undefined && d.next.op !== op);
        const committed = await this.workers.committed(unseen.map((d) => ({ threadId, op: d.next!.op })), "putWrites");
        const replace = unseen.filter((d) => !committed.has(`${threadId}\u0000${d.next!.op}`));
        const byId = new Map(taken.map((w) => [w._id, w]));
        if (replace.length > 0) {
          const ops: AnyBulkWriteOperation<WriteDoc>[] = replace.map((d) => ({
            updateOne: { filter: { _id: d._id, "next.op": d.next!.op }, update: { $set: { next: byId.get(d._id)!.next! } } },
          }));
          await this.run("update fenced writes", "putWrites", () => collection.bulkWrite(ops, { ordered: false }));
        }
      }
    }
    await this.workers.commit(threadId, op, fence, undefined, "putWrites");
    const untag: AnyBulkWriteOperation<WriteDoc>[] = writes.map((w) => ({
      updateOne: { filter: { _id: w._id, "next.op": op }, update: { $set: { channel: w.channel, task_path: w.task_path, value: w.value }, $unset: { next: "" } } },
    }));
    await this.run("update writes untag", "putWrites", () => collection.bulkWrite(untag, { ordered: false }));
  }

  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    this.check();
    checkScope(scope);
    const where = { thread_id: scope.threadId, checkpoint_ns: scope.checkpointNs };
    await this.ensureReady();
    const marker = this.expiry?.read(scope.threadId, "getCheckpoint");
    let doc: CheckpointDoc | null;
    let writes: Promise<WriteDoc[]> | undefined;
    if (scope.checkpointId !== undefined) {
      const id = checkId("checkpoint_id", scope.checkpointId);
      // By id, its writes need nothing from the checkpoint: both at once.
      writes = this.run("find writes", "getCheckpoint", () => this.collections.writes.find({ ...where, checkpoint_id: id }, ALL).toArray());
      writes.catch(() => {});
      doc = await this.run("find checkpoint", "getCheckpoint", () =>
        this.collections.checkpoints.findOne({ _id: keyId([scope.threadId, scope.checkpointNs, id]) }),
      );
      if (doc?.tag) doc = (await this.hideUncommitted([doc], "getCheckpoint"))[0] ?? null;
    } else {
      doc = await this.run("find checkpoint", "getCheckpoint", () => this.collections.checkpoints.findOne(where, { sort: { checkpoint_id: -1 } }));
      // The newest may be a fenced put not committed (under way, refused or cut short): then the one before.
      while (doc?.tag && (await this.hideUncommitted([doc], "getCheckpoint")).length === 0) {
        const older = { ...where, checkpoint_id: { $lt: doc.checkpoint_id } };
        doc = await this.run("find checkpoint", "getCheckpoint", () => this.collections.checkpoints.findOne(older, { sort: { checkpoint_id: -1 } }));
      }
    }
    if (marker && !live(await marker)) return undefined;
    if (!doc) {
      await writes;
      return undefined;
    }
    return (await this.withParts([doc], "getCheckpoint", { writes, checkExpiry: false }))[0];
  }

  async *listCheckpoints(query: ListCheckpointsQuery): AsyncGenerator<StoredCheckpoint> {
    this.check();
    const where: Filter<CheckpointDoc> = {};
    const ids: Document = {};
    if (query.threadId !== undefined) where.thread_id = checkId("thread_id", query.threadId);
    if (query.checkpointNs !== undefined) where.checkpoint_ns = checkId("checkpoint_ns", query.checkpointNs);
    if (query.checkpointId !== undefined) ids.$eq = checkId("checkpoint_id", query.checkpointId);
    if (query.before !== undefined) ids.$lt = checkId("before.checkpoint_id", query.before);
    // A filter key whose value is undefined matches metadata without that key: not expressed here (the
    // query returns more, core's re-check drops them), so a limit is then left to core.
    let exact = true;
    if (query.filter) {
      const hashes: string[] = [];
      for (const [key, value] of Object.entries(query.filter)) {
        if (value === undefined) exact = false;
        else hashes.push(metadataKey(key, value));
      }
      if (hashes.length > 0) where.metadata_kv = { $all: hashes };
    }
    let remaining = exact && query.limit !== undefined ? query.limit : Number.POSITIVE_INFINITY;
    await this.ensureReady();
    let last: CheckpointDoc | undefined;
    while (remaining > 0) {
      const size = Math.min(this.pageSize, remaining);
      const filter: Filter<CheckpointDoc> = { ...where };
      if (last) Object.assign(filter, after(last, where, ids));
      else if (Object.keys(ids).length > 0) filter.checkpoint_id = ids;
      const docs = await this.run("find checkpoints", "listCheckpoints", () =>
        this.collections.checkpoints.find(filter, { sort: NEWEST_FIRST, limit: size, batchSize: size }).toArray(),
      );
      for (const stored of await this.withParts(await this.hideUncommitted(docs, "listCheckpoints"), "listCheckpoints", { checkExpiry: true })) {
        yield stored;
        remaining -= 1;
        if (remaining <= 0) return;
      }
      if (docs.length < size) return;
      last = docs[docs.length - 1];
    }
  }

  /**
   * Reads the namespace's checkpoint headers and the headers of the requested channels' blobs (no
   * values) at once, walks the parent chain in memory to each channel's seed, then fetches the chain's
   * writes and the seeds' blobs at once: four queries in two round trips, whatever the depth.
   */
  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    this.check();
    checkScope(query);
    checkId("checkpoint_id", query.checkpointId);
    for (const channel of query.channels) checkId(`channel name "${channel}"`, channel);
    const where = { thread_id: query.threadId, checkpoint_ns: query.checkpointNs };
    await this.ensureReady();
    const marker = this.expiry?.read(query.threadId, "getHistory");
    const [headers, blobHeaders] = await Promise.all([
      this.run("find checkpoint headers", "getHistory", () =>
        this.collections.checkpoints
          .find(where, { ...ALL, projection: { _id: 0, checkpoint_id: 1, parent_checkpoint_id: 1, channel_versions: 1, delta_roots: 1 } })
          .toArray(),
      ),
      this.run("find blob headers", "getHistory", () =>
        this.collections.blobs
          .find({ ...where, channel: { $in: query.channels } }, { ...ALL, projection: { _id: 0, channel: 1, version: 1, "value.type": 1 } })
          .toArray(),
      ),
    ]);
    if (marker && !live(await marker)) return { ancestors: [] };
    const byId = new Map(headers.map((h) => [h.checkpoint_id, h]));
    const seedable = new Set(blobHeaders.filter((b) => b.value?.type !== "empty").map((b) => `${b.channel}\u0000${b.version}`));
    const ancestors: HistoryAncestor[] = [];
    const unseeded = new Set(query.channels);
    const seeds: Array<{ channel: string; version: string; root: string | undefined; ancestor: HistoryAncestor }> = [];
    const seen = new Set<string>();
    let id = byId.get(query.checkpointId)?.parent_checkpoint_id ?? undefined;
    while (id !== undefined && !seen.has(id) && unseeded.size > 0) {
      seen.add(id);
      const header = byId.get(id);
      if (!header) break;
      const ancestor: HistoryAncestor = {
        checkpointId: id,
        parentCheckpointId: header.parent_checkpoint_id ?? undefined,
        channelVersions: versionsOf(header),
        blobs: [],
        writes: [],
      };
      const roots = rootsOf(header);
      if (roots) ancestor.deltaRoots = roots;
      for (const channel of [...unseeded]) {
        const version = ancestor.channelVersions[channel];
        if (version === undefined || !seedable.has(`${channel}\u0000${version}`)) continue;
        seeds.push({ channel, version, root: roots?.[channel], ancestor });
        unseeded.delete(channel);
      }
      ancestors.push(ancestor);
      id = header.parent_checkpoint_id ?? undefined;
    }
    if (ancestors.length === 0) return { ancestors };
    const byAncestor = new Map(ancestors.map((a) => [a.checkpointId, a]));
    const channels = this.manyWorkers
      ? { $or: [{ channel: { $in: query.channels } }, { "next.channel": { $in: query.channels } }] }
      : { channel: { $in: query.channels } };
    const [writes, blobs] = await Promise.all([
      this.run("find writes", "getHistory", () =>
        this.collections.writes.find({ ...where, checkpoint_id: { $in: [...byAncestor.keys()] }, ...channels } as Filter<WriteDoc>, ALL).toArray(),
      ),
      seeds.length === 0
        ? []
        : this.run("find blobs", "getHistory", () =>
            this.collections.blobs.find({ ...where, $or: seeds.map((s) => blobCondition(s.channel, s.version, s.root)) }, ALL).toArray(),
          ),
    ]);
    for (const write of await this.resolveWrites(writes, "getHistory")) {
      if (query.channels.includes(write.channel)) byAncestor.get(write.checkpoint_id)?.writes.push(fromWriteDoc(write));
    }
    for (const blob of blobs) {
      const seed = seeds.find((s) => s.channel === blob.channel && inRange(blob.version, s.version, s.root));
      seed?.ancestor.blobs.push(fromBlobDoc(blob));
    }
    const values = ancestors.flatMap((a) => [...a.blobs.map((b) => b.value), ...a.writes.map((w) => w.value)]);
    const chunks = await this.chunksFor(values.map((value) => ({ threadId: query.threadId, value })), "getHistory");
    return { ancestors, chunks: chunks.get(query.threadId) ?? [] };
  }

  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    this.check();
    checkId("thread_id", threadId);
    if (hashes.length === 0) return [];
    for (const hash of hashes) checkId("chunk hash", hash);
    await this.ensureReady();
    const docs = await this.run("find chunks", "getChunks", () =>
      this.collections.chunks.find({ thread_id: threadId, hash: { $in: [...new Set(hashes)] } }, ALL).toArray(),
    );
    return docs.map(fromChunkDoc);
  }

  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    this.check();
    checkScope(scope);
    if (keys.length === 0) return [];
    for (const key of keys) {
      checkId(`channel name "${key.channel}"`, key.channel);
      checkId(`version of channel "${key.channel}"`, key.version);
    }
    await this.ensureReady();
    const docs = await this.run("find blobs", "getBlobs", () =>
      this.collections.blobs.find({ thread_id: scope.threadId, checkpoint_ns: scope.checkpointNs, $or: keys.map((k) => blobCondition(k.channel, k.version)) }, ALL).toArray(),
    );
    return docs.map(fromBlobDoc);
  }

  /**
   * Removes the thread's checkpoints first (the commit points, so that no checkpoint is ever visible
   * without its parts), then its writes, blobs and chunks, including parts a crashed `putCheckpoint`
   * left behind that no checkpoint references. Interrupted, it can simply be run again.
   */
  async deleteThread(threadId: string): Promise<void> {
    this.check();
    checkId("thread_id", threadId);
    await this.ensureReady();
    await this.deleteThreadData(threadId, "deleteThread");
    await this.expiry?.forget(threadId, "deleteThread");
  }

  /**
   * Every record of the thread by key, for retention: one query per collection, each an equality on
   * `thread_id`, all at once, whatever the thread's length. Values are read to count their bytes and
   * dropped as they arrive (FerretDB has no `$binarySize`). An expired thread (`ttlSeconds`) has none.
   *
   * With `manyWorkers`, records a fenced call left tagged are listed as readers see them (one lookup
   * per such record): a checkpoint document whose commit is missing is not a checkpoint (its blobs
   * and chunks, read by nothing, are then removed by the prune as orphans, and the document itself,
   * when older than the thread's newest checkpoint, by the removal that follows this listing); a
   * write is listed with the value readers see.
   */
  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    this.check();
    checkId("thread_id", threadId);
    await this.ensureReady();
    const operation = "listThreadRecords";
    const where = { thread_id: threadId };
    const { checkpoints, blobs, writes, chunks } = this.collections;
    const marker = this.expiry?.read(threadId, operation);
    const [checkpointDocs, blobKeys, writeHeads, chunkKeys] = await Promise.all([
      this.run("find checkpoints", operation, () => checkpoints.find(where, ALL).toArray()),
      this.run("find blobs", operation, () => mapAll(blobs.find(where, ALL), blobKeyOf)),
      this.run("find writes", operation, () => mapAll(writes.find(where, ALL), writeHeadOf)),
      this.run("find chunks", operation, () => mapAll(chunks.find(where, ALL), chunkKeyOf)),
    ]);
    this.uncommitted.delete(threadId);
    if (marker && !live(await marker)) return { checkpoints: [], blobs: [], writes: [], chunks: [] };
    const visible = await this.hideUncommitted(checkpointDocs, operation);
    let newest: string | undefined;
    for (const doc of visible) if (newest === undefined || doc.checkpoint_id > newest) newest = doc.checkpoint_id;
    // Older than the newest checkpoint, as core judges writes without a checkpoint: a newer one may
    // belong to a put still under way.
    const garbage = checkpointDocs.filter((d) => d.tag && !visible.includes(d) && newest !== undefined && d.checkpoint_id < newest);
    if (garbage.length > 0) {
      if (this.uncommitted.size >= 1000) this.uncommitted.clear();
      this.uncommitted.set(threadId, garbage.map((d) => ({ _id: d._id, op: d.tag!.op })));
    }
    const pending = writeHeads.filter((w) => w.next);
    const committed = pending.length === 0 ? new Set<string>() : await this.workers.committed(pending.map((w) => ({ threadId, op: w.next!.op })), operation);
    return {
      checkpoints: visible.map(fromCheckpointDoc),
      blobs: blobKeys,
      writes: writeHeads.map((w) => writeKeyOf(w, w.next !== undefined && committed.has(`${threadId}\u0000${w.next.op}`))),
      chunks: chunkKeys,
    };
  }

  /**
   * Removes what the request lists with one `deleteMany` per collection (under `thread_id`), in the
   * order that makes a crash harmless without transactions: checkpoint documents (the commit points),
   * then their writes, then blobs, then chunks; a crash leaves only records nothing reads, which the
   * next prune removes. The lease register is never touched but for the status change the request
   * carries (an appended entry, after the removals).
   *
   * With `fence`, the thread's newest register entry is read first: `LeaseLostError`, nothing removed,
   * when another worker holds the thread. The check and the removals are not one atomic step (no
   * multi-document transaction): a removal that passed it runs to its end, and its status change is
   * dropped if the lease moved meanwhile (the status is then the new holder's).
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    this.check();
    const { threadId } = request;
    checkId("thread_id", threadId);
    for (const c of request.checkpoints) {
      checkId("checkpoint_ns", c.checkpointNs);
      checkId("checkpoint_id", c.checkpointId);
    }
    for (const b of request.blobs) {
      checkId("checkpoint_ns", b.checkpointNs);
      checkId(`channel name "${b.channel}"`, b.channel);
      checkId(`version of channel "${b.channel}"`, b.version);
    }
    for (const hash of request.chunks) checkId("chunk hash", hash);
    if (request.status) {
      checkId("status checkpoint_id", request.status.checkpointId);
      checkRemovalStatus(request.status);
    }
    await this.ensureReady();
    const operation = "deleteRecords";
    const fence = this.manyWorkers ? request.fence : undefined;
    if (fence) await this.workers.holds(threadId, fence, operation);
    const filters = removalFilters(request, this.uncommitted.get(threadId));
    this.uncommitted.delete(threadId);
    const { checkpoints, writes, blobs, chunks } = this.collections;
    for (const filter of filters.checkpoints) await this.run("delete checkpoints", operation, () => checkpoints.deleteMany(filter));
    for (const filter of filters.writes) await this.run("delete writes", operation, () => writes.deleteMany(filter));
    for (const filter of filters.blobs) await this.run("delete blobs", operation, () => blobs.deleteMany(filter));
    for (const filter of filters.chunks) await this.run("delete chunks", operation, () => chunks.deleteMany(filter));
    if (this.manyWorkers && request.status !== undefined) await this.workers.replaceStatus(threadId, request.status, fence, operation);
  }

  /**
   * Deletes threads whose `ttlSeconds` passed since their last write (at most `limit` per call) and
   * returns how many. An expired thread is already invisible to reads, as a whole (its expiry is one
   * document); this reclaims its storage. A sweep claims each thread first, so sweeps in several
   * processes never delete the same thread twice, and a write arriving meanwhile fails with
   * `MongoThreadExpiringError` (a `StoreBusyError`) rather than landing in a half-deleted thread. Call
   * it from a timer:
   *
   * ```ts
   * setInterval(() => store.deleteExpiredThreads().catch(console.error), 60_000).unref();
   * ```
   */
  async deleteExpiredThreads(options: { limit?: number } = {}): Promise<number> {
    this.check();
    if (!this.expiry) return 0;
    await this.ensureReady();
    return this.expiry.sweep(positiveInteger(options.limit, "limit", 100, 100_000), "deleteExpiredThreads");
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient) await this.client.close();
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError(STORE_NAME);
  }

  private async run<T>(command: string, operation: string, op: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await op();
    } catch (error) {
      throw translateError(error, operation, STORE_NAME);
    }
    this.listener?.({ command });
    return result;
  }

  /** Checks once per store that `setup()` ran on this database (the unique indexes are what make writes idempotent). */
  private ensureReady(): Promise<void> {
    this.ready ??= this.run("find meta", "setup", () => this.collections.meta.findOne({ _id: "layout" })).then(
      (layout) => {
        if (!layout) {
          throw new StoreNotSetUpError(STORE_NAME, `database "${this.db.databaseName}" has no ${this.collections.meta.collectionName} document (collections and indexes missing)`);
        }
        if (layout.version > LAYOUT_VERSION) throw this.newerLayout(layout.version);
      },
      (error: unknown) => {
        this.ready = undefined;
        throw error;
      },
    );
    return this.ready;
  }

  private newerLayout(version: number): StoreNotSetUpError {
    return new StoreNotSetUpError(
      STORE_NAME,
      `database "${this.db.databaseName}" was set up by a newer @resumable/mongodb (layout ${version}, this one knows ${LAYOUT_VERSION}); upgrade it`,
    );
  }

  private async insertChunks(threadId: string, chunks: ChunkRecord[], operation: string): Promise<void> {
    const docs = dedupe(chunks, (c) => `${c.hash}\u0000${c.index}`).map((chunk) => {
      checkId("chunk hash", chunk.hash);
      return toChunkDoc(threadId, chunk);
    });
    if (docs.length > 0) await this.run("insert chunks", operation, () => insertOrIgnore(this.collections.chunks, docs));
  }

  /**
   * Gives each checkpoint its blobs (the version it references of each channel, and every version of a
   * delta channel's range) and its writes (`writes`, when already fetched): one query each, at once.
   * With `checkExpiry` (and a TTL), checkpoints of expired threads are dropped.
   */
  private async withParts(
    docs: CheckpointDoc[],
    operation: string,
    { writes, checkExpiry }: { writes?: Promise<WriteDoc[]> | undefined; checkExpiry: boolean },
  ): Promise<StoredCheckpoint[]> {
    if (docs.length === 0) return [];
    const scopes = new Map<string, { where: { thread_id: string; checkpoint_ns: string }; ids: string[]; blobs: Map<string, Document> }>();
    const records = docs.map(fromCheckpointDoc);
    for (const record of records) {
      const key = JSON.stringify([record.threadId, record.checkpointNs]);
      let scope = scopes.get(key);
      if (!scope) {
        scope = { where: { thread_id: record.threadId, checkpoint_ns: record.checkpointNs }, ids: [], blobs: new Map() };
        scopes.set(key, scope);
      }
      scope.ids.push(record.checkpointId);
      for (const [channel, version] of Object.entries(record.channelVersions)) {
        const condition = blobCondition(channel, version, record.deltaRoots?.[channel]);
        scope.blobs.set(JSON.stringify(condition), condition);
      }
    }
    const groups = [...scopes.values()];
    const anyOf = <T>(parts: T[]): T | { $or: T[] } => (parts.length === 1 ? parts[0]! : { $or: parts });
    const blobGroups = groups.filter((g) => g.blobs.size > 0).map((g) => ({ ...g.where, $or: [...g.blobs.values()] }));
    const threads = [...new Set(records.map((r) => r.threadId))];
    const [blobDocs, writeDocs, expired] = await Promise.all([
      blobGroups.length === 0 ? [] : this.run("find blobs", operation, () => this.collections.blobs.find(anyOf(blobGroups) as Filter<BlobDoc>, ALL).toArray()),
      writes ??
        this.run("find writes", operation, () =>
          this.collections.writes.find(anyOf(groups.map((g) => ({ ...g.where, checkpoint_id: { $in: g.ids } }))) as Filter<WriteDoc>, ALL).toArray(),
        ),
      this.expiry && checkExpiry ? this.expiry.expired(threads, operation) : new Set<string>(),
    ]);
    const visible = records.filter((record) => !expired.has(record.threadId));
    const blobsOf = new Map<string, BlobRecord[]>();
    for (const blob of blobDocs) push(blobsOf, JSON.stringify([blob.thread_id, blob.checkpoint_ns, blob.channel]), fromBlobDoc(blob));
    const writesOf = new Map<string, WriteRecord[]>();
    for (const write of await this.resolveWrites(writeDocs, operation)) push(writesOf, JSON.stringify([write.thread_id, write.checkpoint_ns, write.checkpoint_id]), fromWriteDoc(write));
    const stored = visible.map((record): StoredCheckpoint => {
      const blobs: BlobRecord[] = [];
      for (const [channel, version] of Object.entries(record.channelVersions)) {
        for (const blob of blobsOf.get(JSON.stringify([record.threadId, record.checkpointNs, channel])) ?? []) {
          if (inRange(blob.version, version, record.deltaRoots?.[channel])) blobs.push(blob);
        }
      }
      return { record, blobs, writes: writesOf.get(JSON.stringify([record.threadId, record.checkpointNs, record.checkpointId])) ?? [] };
    });
    // The chunks and pieces of the whole page in one more query, rather than one per checkpoint later.
    const chunks = await this.chunksFor(
      stored.flatMap((s) => [s.record.checkpoint, s.record.metadata, ...s.blobs.map((b) => b.value), ...s.writes.map((w) => w.value)].map((value) => ({ threadId: s.record.threadId, value }))),
      operation,
    );
    for (const s of stored) {
      const own = chunks.get(s.record.threadId);
      if (own) s.chunks = own;
    }
    return stored;
  }

  /** Every chunk (all indices) of the hashes the values reference, per thread, in one query. */
  private async chunksFor(values: Array<{ threadId: string; value: SerializedValue }>, operation: string): Promise<Map<string, ChunkRecord[]>> {
    const hashes = new Map<string, Set<string>>();
    for (const { threadId, value } of values) {
      const refs = [...(value.refs ?? []), ...(value.chunkRef ? [value.chunkRef.hash] : [])];
      if (refs.length === 0) continue;
      let set = hashes.get(threadId);
      if (!set) hashes.set(threadId, (set = new Set()));
      for (const hash of refs) set.add(hash);
    }
    const out = new Map<string, ChunkRecord[]>();
    if (hashes.size === 0) return out;
    const parts = [...hashes].map(([threadId, set]) => ({ thread_id: threadId, hash: { $in: [...set] } }));
    const docs = await this.run("find chunks", operation, () => this.collections.chunks.find(parts.length === 1 ? parts[0]! : { $or: parts }, ALL).toArray());
    for (const doc of docs) push(out, doc.thread_id, fromChunkDoc(doc));
    return out;
  }

  private async deleteThreadData(threadId: string, operation: string): Promise<void> {
    const { checkpoints, writes, blobs, chunks } = this.collections;
    const where = { thread_id: threadId };
    await this.run("delete checkpoints", operation, () => checkpoints.deleteMany(where));
    await Promise.all([
      this.run("delete writes", operation, () => writes.deleteMany(where)),
      this.run("delete blobs", operation, () => blobs.deleteMany(where)),
      this.run("delete chunks", operation, () => chunks.deleteMany(where)),
    ]);
    // The status goes with the thread; the lease (its last token) stays, so a stale holder stays fenced.
    if (this.manyWorkers) await this.workers.forget(threadId, operation);
  }

  /** Checkpoint documents without those of fenced puts not committed (one lease query, only if any is tagged). */
  private async hideUncommitted(docs: CheckpointDoc[], operation: string): Promise<CheckpointDoc[]> {
    const tagged = docs.filter((d) => d.tag);
    if (tagged.length === 0) return docs;
    const committed = await this.workers.committed(tagged.map((d) => ({ threadId: d.thread_id, op: d.tag!.op })), operation);
    return docs.filter((d) => !d.tag || committed.has(`${d.thread_id}\u0000${d.tag.op}`));
  }

  /** Write documents as readers see them: a committed `next` replaces the value, an uncommitted one is ignored. */
  private async resolveWrites(docs: WriteDoc[], operation: string): Promise<WriteDoc[]> {
    const pending = docs.filter((d) => d.next);
    if (pending.length === 0) return docs;
    const committed = await this.workers.committed(pending.map((d) => ({ threadId: d.thread_id, op: d.next!.op })), operation);
    const out: WriteDoc[] = [];
    for (const doc of docs) {
      if (!doc.next) out.push(doc);
      else if (committed.has(`${doc.thread_id}\u0000${doc.next.op}`)) out.push({ ...doc, channel: doc.next.channel, task_path: doc.next.task_path, value: doc.next.value });
      else if (doc.value !== undefined) out.push(doc);
    }
    return out;
  }

  // -------------------------------------------------------------------------------------------------
  // manyWorkers: leases and thread status (see many-workers.ts).
  // -------------------------------------------------------------------------------------------------

  /**
   * Claims the thread with one conditional upsert of its lease document. Expiry is judged by this
   * process's clock (FerretDB has no server-side time in a query filter); the token alone fences.
   */
  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    await this.beforeManyWorkers("claimLease", claim.threadId);
    return this.workers.claim(claim);
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    await this.beforeManyWorkers("renewLease", lease.threadId);
    return this.workers.renew(lease, ttlMs);
  }

  async releaseLease(lease: Lease): Promise<void> {
    await this.beforeManyWorkers("releaseLease", lease.threadId);
    await this.workers.release(lease);
  }

  async getLease(threadId: string): Promise<LeaseState | undefined> {
    await this.beforeManyWorkers("getLease", threadId);
    return this.workers.get(threadId);
  }

  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    await this.beforeManyWorkers("getThreadStatus", threadId);
    return this.workers.status(threadId, "getThreadStatus");
  }

  /** One query per state on the index `(state, updated_at, _id)`, each `limit` at most, merged. */
  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    await this.beforeManyWorkers("listThreads");
    return this.workers.list(query);
  }

  /** A read of the lease document and an update conditional on the status revision read (and the lease, with `fence`). */
  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    await this.beforeManyWorkers("patchThreadStatus", request.threadId);
    return this.workers.patch(request.threadId, request.patch, request.fence, "patchThreadStatus");
  }

  private async beforeManyWorkers(operation: string, threadId?: string): Promise<void> {
    this.check();
    if (!this.manyWorkers) throw new InvalidConfigError("manyWorkers", `${STORE_NAME}: ${operation}() needs the manyWorkers option (leases and thread status).`);
    if (threadId !== undefined) checkId("thread_id", threadId);
    await this.ensureReady();
  }

}

/** The blob of `channel` at `version`, or every blob of its delta range `[root, version]`. */
function blobCondition(channel: string, version: string, root?: string): Document {
  return root === undefined ? { channel, version } : { channel, version: { $gte: root, $lte: version } };
}

/** Whether a blob version is the one wanted, or within a delta range, compared by code point as MongoDB does. */
function inRange(version: string, wanted: string, root: string | undefined): boolean {
  if (root === undefined) return version === wanted;
  return compareCodePoints(version, root) >= 0 && compareCodePoints(version, wanted) <= 0;
}

function compareCodePoints(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** The keyset condition of the page after `last`, newest first by (thread, namespace, id). */
function after(last: CheckpointDoc, where: Filter<CheckpointDoc>, ids: Document): Filter<CheckpointDoc> {
  const id = { ...ids, $lt: ids.$lt !== undefined && compareCodePoints(ids.$lt as string, last.checkpoint_id) < 0 ? ids.$lt : last.checkpoint_id };
  if (where.thread_id !== undefined && where.checkpoint_ns !== undefined) return { checkpoint_id: id };
  const older: Filter<CheckpointDoc>[] = [{ thread_id: last.thread_id, checkpoint_ns: last.checkpoint_ns, checkpoint_id: id }];
  const idCondition = Object.keys(ids).length > 0 ? { checkpoint_id: ids } : {};
  older.push({ thread_id: last.thread_id, checkpoint_ns: { $lt: last.checkpoint_ns }, ...idCondition });
  if (where.thread_id === undefined) older.push({ thread_id: { $lt: last.thread_id }, ...idCondition });
  return { $or: older };
}

/** Inserts documents, keeping those already stored under the same unique key (insert-or-ignore). */
async function insertOrIgnore<T extends Document>(collection: Collection<T>, docs: T[]): Promise<T[]> {
  try {
    await collection.insertMany(docs as unknown as Parameters<Collection<T>["insertMany"]>[0], { ordered: false });
    return [];
  } catch (error) {
    if (!onlyDuplicateKeys(error)) throw error;
    // The documents whose key was taken (all of them, should the server not say which).
    const listed = (error as { writeErrors?: unknown }).writeErrors;
    const errors = listed === undefined ? [] : Array.isArray(listed) ? listed : [listed];
    const taken = errors.map((e) => docs[(e as { index?: number }).index ?? -1]).filter((d): d is T => d !== undefined);
    return taken.length > 0 ? taken : docs;
  }
}

/**
 * Runs a keyed upsert, again when it failed on a duplicate key: two upserts of one new key may both
 * try to insert, and the second then finds the document the first created.
 */
async function retryDuplicate<T>(op: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await op();
    } catch (error) {
      if (attempt >= 3 || !onlyDuplicateKeys(error)) throw error;
    }
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function checkScope(scope: ThreadScope): void {
  checkId("thread_id", scope.threadId);
  checkId("checkpoint_ns", scope.checkpointNs);
}

function dedupe<T>(items: T[], key: (item: T) => string, keep: "first" | "last" = "first"): T[] {
  const seen = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    if (keep === "last" || !seen.has(k)) seen.set(k, item);
  }
  return seen.size === items.length ? items : [...seen.values()];
}

function positiveInteger(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    throw new InvalidConfigError(name, `${STORE_NAME}: "${name}" must be an integer from 1 to ${max >= 1024 * 1024 ? formatBytes(max) : max}, got ${String(value)}.`);
  }
  return value;
}
