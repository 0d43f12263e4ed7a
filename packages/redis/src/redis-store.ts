/**
 * The Redis {@link CheckpointStore}: plain Redis 7 (or Valkey), no modules, standalone or Cluster.
 * One Lua script per store call, each on the keys of one thread (one hash tag, one slot).
 *
 * @module
 */
import { randomBytes } from "node:crypto";

import {
  ID_RULES,
  InvalidConfigError,
  LeaseLostError,
  THREAD_STATES,
  StoreClosedError,
  StoreNotSetUpError,
  checkIdentifier,
  type BlobRecord,
  type CheckpointStore,
  type ChunkRecord,
  type ChunkRef,
  type DeleteRecordsRequest,
  type ThreadRecords,
  type HistoryAncestor,
  type HistoryQuery,
  type HistoryResult,
  type IdentifierRule,
  type Lease,
  type LeaseClaim,
  type LeaseFence,
  type LeaseState,
  type ListCheckpointsQuery,
  type ListThreadsQuery,
  type PatchThreadStatusRequest,
  type ThreadState,
  type ThreadStatusPatch,
  type ThreadStatusRecord,
  type ThreadStatusWrite,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type StoreCapabilities,
  type StoreCommandListener,
  type StoredCheckpoint,
  type ThreadScope,
} from "@resumable/core";
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";

import { translateError } from "./errors.js";
import {
  decodeComponent,
  encodeComponent,
  filterArgs,
  indexKey,
  indexMember,
  layoutKey,
  packBlob,
  packRecord,
  packWrite,
  parseRecordHeader,
  readBlob,
  readChunks,
  readHead,
  readRecord,
  readWrite,
  statusIndexKey,
  statusIndexSuffix,
  statusMember,
  threadBase,
} from "./keys.js";
import { SCRIPTS, type LuaScript } from "./lua.js";

/** What the store needs of a client: ioredis's `Redis` and `Cluster` both have it. */
export interface RedisClient {
  callBuffer(...args: [command: string, ...args: Array<string | Buffer | number>]): Promise<unknown>;
  quit(): Promise<unknown>;
}

/** Options of {@link RedisStore}. */
export interface RedisStoreOptions {
  /**
   * Prepended to every key (default `"resumable:"`). It must not contain `{` or `}`: every key of a
   * thread carries the thread's own hash tag. A client-side ioredis `keyPrefix` applies on top.
   */
  keyPrefix?: string;
  /**
   * Expire a thread this many seconds after its last write (default: never). Every key of the thread
   * gets the same absolute expiry in the same script, refreshed by each put and putWrites, so a
   * thread never expires in part.
   */
  ttlSeconds?: number;
  /**
   * Split values larger than this many bytes into chunks (the store's `capabilities.maxItemBytes`).
   * Default 256 MiB, half of Redis's default `proto-max-bulk-len` of 512 MB per argument.
   */
  chunkBytes?: number;
  /** Checkpoints per page of `listCheckpoints` (default 50); a page also stops at 8 MB of records. */
  pageSize?: number;
  /**
   * `setup()` refuses a server whose `maxmemory-policy` may evict single keys of a thread (any
   * `allkeys-*`, or `volatile-*` when `ttlSeconds` is set), which would tear a checkpoint from its
   * blobs. Default `true`; pass `false` to accept that risk.
   */
  checkEvictionPolicy?: boolean;
}

/** Options of {@link RedisStore.connect}: store options plus ioredis's. */
export interface RedisConnectOptions extends RedisStoreOptions {
  /** Passed to `new Redis(url, ...)`, or as `redisOptions` of a `Cluster`. */
  redis?: RedisOptions;
  /** Passed to `new Cluster(nodes, ...)` when several URLs are given. */
  cluster?: ClusterOptions;
}

const STORE_NAME = "RedisStore";
/** The key layout's version, kept at `<prefix>layout`; `setup()` refuses a newer one. */
export const LAYOUT_VERSION = 1;
const DEFAULT_CHUNK_BYTES = 256 * 1024 * 1024;
const PAGE_BYTES = 8 * 1024 * 1024;
/** Records a list script looks at per call before returning, so a selective filter never blocks the server long. */
const SCAN_BUDGET = 2000;
/** Threads whose index state the store remembers (first put of a thread pays one more command). */
const REMEMBERED_THREADS = 10_000;
const THREAD_PAGE = 100;
/** Status-index entries younger than this are left alone by pruneThreadIndex (a status change may be in flight). */
const DEFAULT_PRUNE_GRACE_MS = 10 * 60_000;

/** A status-index entry: the state's sorted set and the record's updatedAt as the member carries it. */
interface IndexEntry {
  state: string;
  u: string;
}

type Arg = string | Buffer | number;

/**
 * A {@link CheckpointStore} on Redis through ioredis (`Redis` or `Cluster`).
 *
 * - `putCheckpoint`, `putWrites`, `getCheckpoint`, `getHistory`, `getBlobs`, `getChunks` and
 *   `deleteThread` are one EVALSHA each; the first put of a thread also adds it to the thread index.
 * - `listCheckpoints` pages through sorted sets; metadata filters are evaluated in the script.
 * - No KEYS, no SCAN: every key of a thread is found from the thread's own indexes.
 *
 * @example
 * ```ts
 * const store = await RedisStore.connect("redis://127.0.0.1:6379", { keyPrefix: "agents:" });
 * const checkpointer = new ResumableSaver(store);
 * ```
 */
export class RedisStore implements CheckpointStore {
  readonly capabilities: Partial<StoreCapabilities>;
  /** The client commands go through. */
  readonly client: RedisClient;
  readonly keyPrefix: string;
  private readonly ttlMs: number;
  private readonly pageSize: number;
  private readonly checkEviction: boolean;
  private ownsClient = false;
  /** thread id -> whether it holds an index token (absent: unknown). */
  private readonly indexed = new Map<string, boolean>();
  private listener: StoreCommandListener | undefined;
  private closed = false;
  /**
   * A Cluster (an ioredis `Cluster`, or a server whose INFO says `cluster_enabled:1`): the status index
   * is another slot than the thread, so it is moved by commands around each status-changing script
   * instead of inside it (see {@link RedisStore.putCheckpoint}).
   */
  private cluster: boolean;

  /** @param client An ioredis `Redis` or `Cluster` (left open by `close()`: the caller owns it). */
  constructor(client: RedisClient, options: RedisStoreOptions = {}) {
    this.client = client;
    this.keyPrefix = options.keyPrefix ?? "resumable:";
    if (typeof this.keyPrefix !== "string" || /[{}]/.test(this.keyPrefix)) {
      throw new InvalidConfigError("keyPrefix", `RedisStore: "keyPrefix" must be a string without "{" or "}" (got ${JSON.stringify(this.keyPrefix)}): keys carry the thread's hash tag.`);
    }
    this.ttlMs = positive(options.ttlSeconds, "ttlSeconds", 0) * 1000;
    this.pageSize = Math.floor(positive(options.pageSize, "pageSize", 50));
    this.checkEviction = options.checkEvictionPolicy ?? true;
    // Built apart and then assigned, so that a capability this core version does not know yet
    // (`deltaRanges`: the read scripts return every blob of a delta channel's range) is no type error.
    const capabilities = {
      maxItemBytes: positive(options.chunkBytes, "chunkBytes", DEFAULT_CHUNK_BYTES),
      nativeMetadataFilter: true,
      persistent: true,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      leases: true,
      threadStatus: true,
      retention: true,
    };
    this.capabilities = capabilities;
    this.cluster = typeof (client as { nodes?: unknown }).nodes === "function";
  }

  /**
   * A store with a client of its own, which `close()` quits: `new Redis(url)` for one URL, a
   * `Cluster` for several (`["redis://10.0.0.1:7000", ...]`; user, password and TLS from the first).
   */
  static connect(url: string | readonly string[], options: RedisConnectOptions = {}): RedisStore {
    const store = new RedisStore(createClient(url, options), options);
    store.ownsClient = true;
    return store;
  }

  instrument(listener: StoreCommandListener | undefined): void {
    this.listener = listener;
  }

  /**
   * Checks the server (Redis 6 or newer, an eviction policy that cannot tear a thread), records the
   * key layout version under `<prefix>layout`, and loads the scripts. Idempotent.
   */
  async setup(): Promise<void> {
    this.check();
    const info = String(await this.command("setup", "INFO", ["INFO"]));
    const version = /redis_version:(\d+)/.exec(info)?.[1];
    if (version !== undefined && Number(version) < 6) {
      throw new StoreNotSetUpError(STORE_NAME, `the server is Redis ${/redis_version:(\S+)/.exec(info)?.[1]}; this store needs Redis 6 or newer (or Valkey)`);
    }
    if (/cluster_enabled:1/.test(info)) this.cluster = true;
    const policy = /maxmemory_policy:(\S+)/.exec(info)?.[1];
    if (this.checkEviction && policy && (policy.startsWith("allkeys-") || (policy.startsWith("volatile-") && this.ttlMs > 0))) {
      throw new InvalidConfigError(
        "maxmemory-policy",
        `RedisStore: the server's maxmemory-policy is ${policy}: under memory pressure Redis would evict single keys of a thread, ` +
          `leaving a checkpoint without its blobs. Set maxmemory-policy noeviction (redis.conf, or CONFIG SET maxmemory-policy noeviction), ` +
          `or pass { checkEvictionPolicy: false } to accept the risk.`,
      );
    }
    const layout = layoutKey(this.keyPrefix);
    await this.command("setup", "SET layout NX", ["SET", layout, String(LAYOUT_VERSION), "NX"]);
    const stored = Number(String(await this.command("setup", "GET layout", ["GET", layout])));
    if (stored > LAYOUT_VERSION) {
      throw new StoreNotSetUpError(STORE_NAME, `keys under "${this.keyPrefix}" use layout ${stored}, newer than this package knows (${LAYOUT_VERSION}); upgrade @resumable/redis`);
    }
    // Every master of a cluster, so that EVALSHA finds the scripts wherever a slot lives.
    const nodes = (this.client as { nodes?: (role: "master") => RedisClient[] }).nodes?.("master") ?? [this.client];
    for (const node of nodes) {
      for (const script of Object.values(SCRIPTS)) {
        await this.command("setup", "SCRIPT LOAD", ["SCRIPT", "LOAD", script.lua], node);
      }
    }
  }

  /**
   * One script: the fence (when the saver holds a lease) is read first, then chunks, blobs, the record
   * and a root checkpoint's status are written, so a refused put writes nothing. On a standalone server
   * the same script moves the thread in the status index; on a Cluster the store adds the new index
   * entry before the script and removes the old one after it (see {@link RedisStore.listThreads}).
   */
  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    this.check();
    const { record } = request;
    checkScope(record);
    check("checkpoint_id", record.checkpointId, ID_RULES.checkpointId);
    if (record.parentCheckpointId !== undefined) check("parent checkpoint_id", record.parentCheckpointId, ID_RULES.checkpointId);
    for (const [channel, version] of Object.entries({ ...record.channelVersions, ...record.deltaRoots })) {
      check("channel", channel, ID_RULES.channel);
      check(`version of channel "${channel}"`, version, ID_RULES.version);
    }
    const fence = fenceArg(request.fence);
    const args: Arg[] = [encodeComponent(record.checkpointNs), record.checkpointId, packRecord(record), ...chunkArgs(request.chunks), request.blobs.length];
    for (const blob of request.blobs) {
      check("channel", blob.channel, ID_RULES.channel);
      check(`version of channel "${blob.channel}"`, blob.version, ID_RULES.version);
      args.push(blob.channel, blob.version, packBlob(blob));
    }
    const threadId = record.threadId;
    const status = request.status && record.checkpointNs === "" ? request.status : undefined;
    args.push(...putStatusArgs(threadId, status));
    const entry: IndexEntry | undefined = status ? { state: status.state, u: timeArg(status.updatedAt, "status updatedAt") } : undefined;
    const pre = this.cluster && entry ? [entry] : [];
    if (pre.length > 0) await this.moveIndex("putCheckpoint", threadId, [], pre);
    const put = async (mode: "check" | "mark", token: string) =>
      (await this.script("putCheckpoint", SCRIPTS.putCheckpoint, threadId, [fence, mode, token, this.ttlMs, ...args], this.statusKeys())) as Reply;
    let token = "";
    let reply: Reply = this.indexed.get(threadId) === false ? [0] : await put("check", "");
    if (Number(reply[0]) === 0) {
      // Indexed before it becomes visible: a crash in between leaves an index entry without a
      // thread (skipped by list), never a thread that list() across threads cannot find.
      token = `${Date.now().toString(36)}.${randomBytes(6).toString("hex")}`;
      await this.command("putCheckpoint", "ZADD threads", ["ZADD", indexKey(this.keyPrefix), "0", indexMember(threadId, token)]);
      reply = await put("mark", token);
    }
    const result = Number(reply[0]);
    if (result === -1) {
      // Refused: nothing of the put was written; what this call added to the indexes goes too.
      if (token) await this.command("putCheckpoint", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), indexMember(threadId, token)]);
      if (pre.length > 0) await this.settleIndex("putCheckpoint", threadId, pre, undefined, await this.currentEntry(threadId));
      throw leaseLost(threadId, request.fence!, reply, "put");
    }
    if (result === 2) {
      // Another process indexed the thread meanwhile; its entry stays, ours goes.
      await this.command("putCheckpoint", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), indexMember(threadId, token)]);
    }
    this.remember(threadId, true);
    if (pre.length > 0) {
      const applied = Number(reply[1]) === 1;
      await this.settleIndex("putCheckpoint", threadId, pre, applied ? entry : undefined, entryOf(reply[2], reply[3]));
    }
  }

  /**
   * One script: the fence first, then chunks, the writes, and the status change of an `ERROR`,
   * `INTERRUPT` or `RESUME` write on a root checkpoint (moved in the status index as for a put).
   */
  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check();
    checkScope(request);
    check("checkpoint_id", request.checkpointId, ID_RULES.checkpointId);
    const fence = fenceArg(request.fence);
    const args: Arg[] = [fence, this.ttlMs, request.mode, encodeComponent(request.checkpointNs), request.checkpointId, ...chunkArgs(request.chunks), request.writes.length];
    for (const write of request.writes) {
      check("taskId", write.taskId, ID_RULES.taskId);
      check("channel", write.channel, ID_RULES.channel);
      check("taskPath", write.taskPath, ID_RULES.taskPath);
      if (!Number.isInteger(write.idx)) throw new InvalidConfigError("idx", `${STORE_NAME}: write idx must be an integer, got ${String(write.idx)}.`);
      args.push(write.taskId, String(write.idx), packWrite(write));
    }
    const patch = request.status && request.checkpointNs === "" ? request.status : undefined;
    if (patch) {
      check("status checkpoint_id", patch.checkpointId, ID_RULES.checkpointId);
      args.push("1", ...patchArgs(request.threadId, patch));
    } else {
      args.push("0");
    }
    await this.patched("putWrites", request.threadId, patch, request.fence, "putWrites", (keys) => this.script("putWrites", SCRIPTS.putWrites, request.threadId, args, keys));
  }

  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    this.check();
    checkScope(scope);
    if (scope.checkpointId !== undefined) check("checkpoint_id", scope.checkpointId, ID_RULES.checkpointId);
    const reply = (await this.script("getCheckpoint", SCRIPTS.getCheckpoint, scope.threadId, [
      encodeComponent(scope.checkpointNs),
      scope.checkpointId ?? "",
    ])) as [number, Item?, unknown?];
    this.remember(scope.threadId, reply[0] === 1);
    if (!reply[1]) return undefined;
    return toStored(reply[1], scope.threadId, scope.checkpointNs, readChunks(reply[2]));
  }

  async *listCheckpoints(query: ListCheckpointsQuery): AsyncIterable<StoredCheckpoint> {
    this.check();
    if (query.threadId !== undefined) check("thread_id", query.threadId, ID_RULES.threadId);
    if (query.checkpointNs !== undefined) check("checkpoint_ns", query.checkpointNs, ID_RULES.checkpointNs);
    for (const [field, id] of [["checkpoint_id", query.checkpointId], ["before", query.before]] as const) {
      if (id !== undefined) check(field, id, ID_RULES.checkpointId);
    }
    // Redis orders members by bytes, which is code point order; so must this shortcut.
    if (query.checkpointId !== undefined && query.before !== undefined && Buffer.compare(Buffer.from(query.checkpointId), Buffer.from(query.before)) >= 0) return;
    let remaining = query.limit;
    if (remaining !== undefined && remaining <= 0) return;
    const filter = filterArgs(query.filter);
    const threads = query.threadId !== undefined ? [query.threadId] : this.indexedThreads();
    for await (const threadId of threads) {
      let cursor: [string, string, string] = [query.checkpointNs !== undefined ? encodeComponent(query.checkpointNs) : "", "0", ""];
      for (;;) {
        const size = remaining === undefined ? this.pageSize : Math.min(this.pageSize, remaining);
        const reply = (await this.script("listCheckpoints", SCRIPTS.list, threadId, [
          query.checkpointNs !== undefined ? "one" : "all",
          ...cursor,
          query.before ?? "",
          query.checkpointId ?? "",
          size,
          PAGE_BYTES,
          SCAN_BUDGET,
          ...filter,
        ])) as [number, Buffer, Buffer, Buffer, Array<[Buffer, Item]>, unknown];
        const chunks = readChunks(reply[5]);
        for (const [ns, item] of reply[4]) {
          yield toStored(item, threadId, decodeComponent(ns.toString("utf8")), chunks);
          if (remaining !== undefined && --remaining <= 0) return;
        }
        if (reply[0] === 1) break;
        cursor = [reply[1].toString("utf8"), reply[2].toString("utf8"), reply[3].toString("utf8")];
      }
    }
  }

  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    this.check();
    checkScope(query);
    check("checkpoint_id", query.checkpointId, ID_RULES.checkpointId);
    for (const channel of query.channels) check("channel", channel, ID_RULES.channel);
    const reply = (await this.script("getHistory", SCRIPTS.getHistory, query.threadId, [
      encodeComponent(query.checkpointNs),
      query.checkpointId,
      ...query.channels,
    ])) as [Array<[Buffer, Buffer, Buffer[], Buffer[]]>, unknown];
    const ancestors = reply[0].map(([id, header, blobs, writes]): HistoryAncestor => {
      const h = parseRecordHeader(header);
      const ancestor: HistoryAncestor = {
        checkpointId: id.toString("utf8"),
        parentCheckpointId: h.p,
        channelVersions: h.v,
        blobs: blobs.map(readBlob),
        writes: writes.map(readWrite),
      };
      if (h.dr) ancestor.deltaRoots = h.dr;
      return ancestor;
    });
    return { ancestors, chunks: readChunks(reply[1]) };
  }

  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    if (hashes.length === 0) return [];
    for (const hash of hashes) checkHash(hash);
    return readChunks(await this.script("getChunks", SCRIPTS.getChunks, threadId, [...new Set(hashes)]));
  }

  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    this.check();
    checkScope(scope);
    if (keys.length === 0) return [];
    const args: Arg[] = [encodeComponent(scope.checkpointNs)];
    for (const key of keys) {
      check("channel", key.channel, ID_RULES.channel);
      check(`version of channel "${key.channel}"`, key.version, ID_RULES.version);
      args.push(key.channel, key.version);
    }
    return ((await this.script("getBlobs", SCRIPTS.getBlobs, scope.threadId, args)) as Buffer[]).map(readBlob);
  }

  /**
   * Deletes every key of the thread but its lease (so its fencing token keeps growing) in one script,
   * status included (and its status-index entry, in the same script on a standalone server), then its
   * entry in the thread index (and, on a Cluster, in the status index).
   */
  async deleteThread(threadId: string): Promise<void> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    const reply = (await this.script("deleteThread", SCRIPTS.deleteThread, threadId, [threadId], this.statusKeys())) as Buffer[];
    this.remember(threadId, false);
    const token = text(reply[0]);
    const status = entryOf(reply[1], reply[2]);
    await Promise.all([
      token ? this.command("deleteThread", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), indexMember(threadId, token)]) : undefined,
      this.cluster && status ? this.moveIndex("deleteThread", threadId, [status], []) : undefined,
    ]);
  }

  /**
   * Every record of the thread by key, for retention: one script (one snapshot, one round trip) that
   * returns checkpoint members whole and blob and write members without their bytes.
   */
  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    const [namespaces, chunkSizes] = (await this.script("listThreadRecords", SCRIPTS.threadRecords, threadId, [])) as [
      Array<[Buffer, Buffer[], Buffer[], number[], Buffer[], number[]]>,
      Array<Buffer | number>,
    ];
    const out: ThreadRecords = { checkpoints: [], blobs: [], writes: [], chunks: [] };
    const refsOf = (header: Record<string, unknown>) => ({
      ...(Array.isArray(header.r) ? { refs: header.r as string[] } : {}),
      ...(header.c ? { chunkHash: (header.c as ChunkRef).hash } : {}),
    });
    for (const [encodedNs, records, blobHeads, blobLengths, writeHeads, writeLengths] of namespaces) {
      const checkpointNs = decodeComponent(encodedNs.toString("utf8"));
      for (const member of records) out.checkpoints.push(readRecord(member, threadId, checkpointNs));
      blobHeads.forEach((head, i) => {
        const { parts, header } = readHead(head, 2);
        out.blobs.push({
          checkpointNs,
          channel: parts[0]!,
          version: parts[1]!,
          empty: header.t === "empty",
          bytes: Number(blobLengths[i]),
          ...(typeof header.b === "string" ? { baseVersion: header.b } : {}),
          ...refsOf(header),
        });
      });
      writeHeads.forEach((head, i) => {
        const { parts, header } = readHead(head, 3);
        out.writes.push({ checkpointNs, checkpointId: parts[0]!, taskId: parts[1]!, idx: Number(parts[2]), channel: String(header.ch), bytes: Number(writeLengths[i]), ...refsOf(header) });
      });
    }
    for (let i = 0; i < chunkSizes.length; i += 2) {
      const field = text(chunkSizes[i]);
      const at = field.indexOf("\u0000");
      out.chunks.push({ hash: field.slice(0, at), index: Number(field.slice(at + 1)), bytes: Number(chunkSizes[i + 1]) });
    }
    return out;
  }

  /**
   * Removes the listed records of one thread in one script, hence at once, after the fence check; a
   * status change it carries moves the thread in the status index inside the script (standalone) or
   * around it (Cluster), as a put's does.
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    this.check();
    const threadId = request.threadId;
    check("thread_id", threadId, ID_RULES.threadId);
    const args: Arg[] = [fenceArg(request.fence), request.checkpoints.length];
    for (const c of request.checkpoints) {
      check("checkpoint_ns", c.checkpointNs, ID_RULES.checkpointNs);
      check("checkpoint_id", c.checkpointId, ID_RULES.checkpointId);
      args.push(encodeComponent(c.checkpointNs), c.checkpointId);
    }
    args.push(request.blobs.length);
    for (const b of request.blobs) {
      check("checkpoint_ns", b.checkpointNs, ID_RULES.checkpointNs);
      check("channel", b.channel, ID_RULES.channel);
      check(`version of channel "${b.channel}"`, b.version, ID_RULES.version);
      args.push(encodeComponent(b.checkpointNs), b.channel, b.version);
    }
    args.push(request.chunks.length);
    for (const hash of request.chunks) {
      checkHash(hash);
      args.push(hash);
    }
    let entry: IndexEntry | undefined;
    if (request.status === null) {
      args.push("remove", threadId);
    } else if (request.status) {
      check("status checkpoint_id", request.status.checkpointId, ID_RULES.checkpointId);
      args.push("replace", request.status.checkpointId, ...putStatusArgs(threadId, request.status.write));
      entry = { state: request.status.write.state, u: timeArg(request.status.write.updatedAt, "status updatedAt") };
    } else {
      args.push("");
    }
    const changesStatus = request.status !== undefined;
    const pre = this.cluster && entry ? [entry] : [];
    if (pre.length > 0) await this.moveIndex("deleteRecords", threadId, [], pre);
    const reply = (await this.script("deleteRecords", SCRIPTS.deleteRecords, threadId, args, changesStatus ? this.statusKeys() : [])) as Reply;
    if (Number(reply[0]) === -1) {
      if (pre.length > 0) await this.settleIndex("deleteRecords", threadId, pre, undefined, await this.currentEntry(threadId));
      throw leaseLost(threadId, request.fence!, reply, "deleteRecords");
    }
    if (this.cluster && changesStatus) await this.settleIndex("deleteRecords", threadId, pre, entry, entryOf(reply[1], reply[2]));
  }

  /**
   * One script on the thread's lease hash (`B:l`, the thread's slot), judged by the server's clock
   * (`TIME`): a free lease (never claimed, released, expired) or the worker's own is taken with the
   * thread's last token plus one.
   */
  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    this.check();
    check("thread_id", claim.threadId, ID_RULES.threadId);
    check("workerId", claim.workerId, ID_RULES.workerId);
    const ttl = ttlArg(claim.ttlMs, "claimLease");
    const reply = (await this.script("claimLease", SCRIPTS.claimLease, claim.threadId, [claim.workerId, ttl])) as Buffer[] | null;
    if (!reply) return undefined;
    return { threadId: claim.threadId, workerId: claim.workerId, token: Number(text(reply[0])), expiresAt: Number(text(reply[1])) };
  }

  /** One script: extends the lease to the server's `TIME` plus `ttlMs` while it still carries the token. */
  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.check();
    check("thread_id", lease.threadId, ID_RULES.threadId);
    const token = fenceArg(lease);
    const reply = (await this.script("renewLease", SCRIPTS.renewLease, lease.threadId, [token, ttlArg(ttlMs, "renewLease")])) as Reply;
    if (Number(reply[0]) === -1) throw leaseLost(lease.threadId, lease, reply, "renewLease");
    return { threadId: lease.threadId, workerId: text(reply[1]), token: lease.token, expiresAt: Number(text(reply[2])) };
  }

  /** One script: marks the lease released if it is still the thread's current one; the token stays. */
  async releaseLease(lease: Lease): Promise<void> {
    this.check();
    check("thread_id", lease.threadId, ID_RULES.threadId);
    await this.script("releaseLease", SCRIPTS.releaseLease, lease.threadId, [fenceArg(lease)]);
  }

  /** One HMGET of the lease hash. */
  async getLease(threadId: string): Promise<LeaseState | undefined> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    const [token, worker, expires, released] = (await this.command("getLease", "HMGET lease", ["HMGET", `${threadBase(this.keyPrefix, threadId)}:l`, "t", "w", "e", "r"])) as Array<Buffer | null>;
    if (!token) return undefined;
    return { threadId, workerId: text(worker), token: Number(text(token)), expiresAt: Number(text(expires)), released: text(released) === "1" };
  }

  /** One HGETALL of the status hash. */
  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    const fields = (await this.command("getThreadStatus", "HGETALL status", ["HGETALL", `${threadBase(this.keyPrefix, threadId)}:s`])) as Buffer[];
    return toStatus(threadId, fields);
  }

  /**
   * Pages through the status index: per state one `ZRANGEBYSCORE … LIMIT` of at most `limit` entries
   * after the cursor, merged in `(updatedAt, thread id)` order, each entry read back and returned only
   * when the thread's record still says that state and time.
   *
   * - Standalone: one script does all of it (index ranges and records), and removes the entries of
   *   threads that expired (`ttlSeconds`). One round trip.
   * - Cluster: the index is one slot and each record lives in its thread's slot, so one script reads
   *   the index, then the records are read with one HGETALL each, sent together. Entries that no longer
   *   match (a status change in flight, or a crash between a status change and its index move) are
   *   skipped, never returned; {@link RedisStore.pruneThreadIndex} removes the ones left behind.
   */
  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    this.check();
    const states = [...new Set(query.states ?? THREAD_STATES)];
    if (states.length === 0) throw new InvalidConfigError("states", `${STORE_NAME}.listThreads(): "states" is empty.`);
    for (const state of states) {
      if (!THREAD_STATES.includes(state)) throw new InvalidConfigError("states", `${STORE_NAME}.listThreads(): unknown state ${JSON.stringify(state)}.`);
    }
    if (!Number.isInteger(query.limit) || query.limit < 1) {
      throw new InvalidConfigError("limit", `${STORE_NAME}.listThreads(): "limit" must be a positive integer, got ${String(query.limit)}.`);
    }
    const older = query.olderThan === undefined ? "" : timeArg(query.olderThan, "olderThan");
    let cursor: [string, string] = query.after ? [timeArg(query.after.updatedAt, "after.updatedAt"), query.after.threadId] : ["", ""];
    const out: ThreadStatusRecord[] = [];
    for (;;) {
      const reply = (await this.command("listThreads", `EVALSHA ${SCRIPTS.listStatus.name}`, [
        "EVALSHA",
        SCRIPTS.listStatus.sha,
        1,
        statusIndexKey(this.keyPrefix),
        query.limit - out.length,
        older,
        ...cursor,
        this.cluster ? "0" : "1",
        statusIndexSuffix(this.keyPrefix),
        ...states,
      ]).catch((error: unknown) => this.noScript(error, SCRIPTS.listStatus, () => this.command("listThreads", `EVAL ${SCRIPTS.listStatus.name}`, [
        "EVAL",
        SCRIPTS.listStatus.lua,
        1,
        statusIndexKey(this.keyPrefix),
        query.limit - out.length,
        older,
        ...cursor,
        this.cluster ? "0" : "1",
        statusIndexSuffix(this.keyPrefix),
        ...states,
      ])))) as [number, Array<[Buffer, Buffer, Buffer, Buffer[]?]>];
      const entries = reply[1].map(([state, score, member, fields]) => {
        const m = text(member);
        return { state: text(state), score: Number(text(score)), threadId: m.slice(0, m.indexOf("\u0000")), scoreText: text(score), fields };
      });
      if (!this.cluster) {
        for (const e of entries) {
          const record = toStatus(e.threadId, e.fields ?? []);
          if (record) out.push(record);
        }
        return out;
      }
      const records = await Promise.all(entries.map((e) => this.getThreadStatus(e.threadId)));
      entries.forEach((e, i) => {
        const record = records[i];
        if (record && record.state === e.state && record.updatedAt === e.score && out.length < query.limit) out.push(record);
      });
      if (out.length >= query.limit || Number(reply[0]) === 1 || entries.length === 0) return out;
      const last = entries[entries.length - 1]!;
      cursor = [last.scoreText, last.threadId];
    }
  }

  /**
   * One script: the fence (if any), then the patch, applied only when the record names the patch's
   * checkpoint; moved in the status index as for a put.
   */
  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    this.check();
    check("thread_id", request.threadId, ID_RULES.threadId);
    check("checkpoint_id", request.patch.checkpointId, ID_RULES.checkpointId);
    if (request.patch.state !== undefined && !THREAD_STATES.includes(request.patch.state)) {
      throw new InvalidConfigError("state", `${STORE_NAME}.patchThreadStatus(): unknown state ${JSON.stringify(request.patch.state)}.`);
    }
    const args: Arg[] = [fenceArg(request.fence), ...patchArgs(request.threadId, request.patch)];
    const reply = await this.patched("patchThreadStatus", request.threadId, request.patch, request.fence, "status change", (keys) =>
      this.script("patchThreadStatus", SCRIPTS.patchStatus, request.threadId, args, keys),
    );
    return Number(reply[1]) === 1 ? toStatus(request.threadId, reply[5] as Buffer[]) : undefined;
  }

  /**
   * Removes thread-index entries whose thread no longer exists (expired by `ttlSeconds`, or a crash
   * between indexing and the first checkpoint) and were made more than `graceMs` ago (default 10
   * minutes, so a first put in flight keeps its entry). Pages through the index, one command per
   * entry; returns how many it removed. `list()` across threads skips such entries anyway.
   */
  async pruneThreadIndex(options: { graceMs?: number } = {}): Promise<number> {
    this.check();
    const graceMs = options.graceMs ?? DEFAULT_PRUNE_GRACE_MS;
    let removed = 0;
    for await (const { threadId, token, member } of this.indexEntries()) {
      const state = Number(await this.script("pruneThreadIndex", SCRIPTS.indexState, threadId, [token]));
      const made = Number.parseInt(token.split(".")[0] ?? "", 36);
      if (state !== 1 && !(Date.now() - made < graceMs)) {
        removed += Number(await this.command("pruneThreadIndex", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), member]));
      }
    }
    // The status index: entries whose thread has no status any more (expired, or deleted on a Cluster
    // by a process that died before its index move) or another one (a crash between a status change and
    // its index move), older than the grace period, so that a status change in flight keeps its entry.
    const base = statusIndexKey(this.keyPrefix);
    for (const state of THREAD_STATES) {
      let offset = 0;
      for (;;) {
        const page = (await this.command("pruneThreadIndex", "ZRANGE status", ["ZRANGE", `${base}:${state}`, offset, offset + THREAD_PAGE - 1, "WITHSCORES"])) as Buffer[];
        const entries: Array<{ member: Buffer; threadId: string; score: number }> = [];
        for (let i = 0; i < page.length; i += 2) {
          const member = page[i]!;
          entries.push({ member, threadId: member.toString("utf8", 0, member.indexOf(0)), score: Number(text(page[i + 1])) });
        }
        const records = await Promise.all(entries.map((e) => this.getThreadStatus(e.threadId)));
        const stale = entries.filter((e, i) => !(records[i]?.state === state && records[i]?.updatedAt === e.score) && !(Date.now() - e.score < graceMs));
        if (stale.length > 0) removed += Number(await this.command("pruneThreadIndex", "ZREM status", ["ZREM", `${base}:${state}`, ...stale.map((e) => e.member)]));
        if (entries.length < THREAD_PAGE) break;
        offset += THREAD_PAGE - stale.length;
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient) await this.client.quit().catch(() => undefined);
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError(STORE_NAME);
  }

  private remember(threadId: string, indexed: boolean): void {
    this.indexed.delete(threadId);
    this.indexed.set(threadId, indexed);
    if (this.indexed.size > REMEMBERED_THREADS) this.indexed.delete(this.indexed.keys().next().value!);
  }

  /** The index's entries in order, a page at a time. */
  private async *indexEntries(): AsyncIterable<{ threadId: string; token: string; member: Buffer }> {
    let min: Arg = "-";
    for (;;) {
      const page = (await this.command("listCheckpoints", "ZRANGEBYLEX threads", ["ZRANGEBYLEX", indexKey(this.keyPrefix), min, "+", "LIMIT", 0, THREAD_PAGE])) as Buffer[];
      for (const member of page) {
        const at = member.indexOf(0);
        yield { threadId: member.toString("utf8", 0, at), token: member.toString("utf8", at + 1), member };
      }
      if (page.length < THREAD_PAGE) return;
      min = Buffer.concat([Buffer.from("("), page[page.length - 1]!]);
    }
  }

  /** Each indexed thread once, in index order. */
  private async *indexedThreads(): AsyncIterable<string> {
    let last: string | undefined;
    for await (const { threadId } of this.indexEntries()) {
      if (threadId !== last) yield threadId;
      last = threadId;
    }
  }

  private async command(operation: string, label: string, args: Arg[], client: RedisClient = this.client): Promise<unknown> {
    let reply: unknown;
    try {
      reply = await client.callBuffer(...(args as [string, ...Arg[]]));
    } catch (error) {
      throw translateError(error, operation, STORE_NAME);
    }
    this.listener?.({ command: label });
    return reply;
  }

  /** EVALSHA, and EVAL when the server lost its script cache (a restart, a failover, SCRIPT FLUSH). */
  private async script(operation: string, script: LuaScript, threadId: string, args: Arg[], extraKeys: string[] = []): Promise<unknown> {
    const keys = [threadBase(this.keyPrefix, threadId), ...extraKeys];
    return this.command(operation, `EVALSHA ${script.name}`, ["EVALSHA", script.sha, keys.length, ...keys, ...args]).catch((error: unknown) =>
      this.noScript(error, script, () => this.command(operation, `EVAL ${script.name}`, ["EVAL", script.lua, keys.length, ...keys, ...args])),
    );
  }

  private noScript(error: unknown, _script: LuaScript, retry: () => Promise<unknown>): Promise<unknown> {
    if (!(error instanceof Error) || !/NOSCRIPT/.test(error.message)) throw error;
    return retry();
  }

  /**
   * The keys a status-changing script gets besides the thread's: the status index on a standalone
   * server (moved inside the script), none on a Cluster (another slot; moved around the script).
   */
  private statusKeys(): string[] {
    return this.cluster ? [] : [statusIndexKey(this.keyPrefix)];
  }

  /** On the status index's slot: removes and adds entries of one thread. */
  private async moveIndex(operation: string, threadId: string, removes: IndexEntry[], adds: IndexEntry[]): Promise<void> {
    if (removes.length === 0 && adds.length === 0) return;
    const args: Arg[] = [removes.length];
    for (const e of removes) args.push(e.state, statusMember(threadId, e.u));
    args.push(adds.length);
    for (const e of adds) args.push(e.state, e.u, statusMember(threadId, e.u));
    const key = statusIndexKey(this.keyPrefix);
    await this.command(operation, `EVALSHA ${SCRIPTS.statusIndex.name}`, ["EVALSHA", SCRIPTS.statusIndex.sha, 1, key, ...args]).catch((error: unknown) =>
      this.noScript(error, SCRIPTS.statusIndex, () => this.command(operation, `EVAL ${SCRIPTS.statusIndex.name}`, ["EVAL", SCRIPTS.statusIndex.lua, 1, key, ...args])),
    );
  }

  /**
   * Cluster, after a status-changing script: the entry it made current stays (added again, in case a
   * concurrent change removed it), the record's previous entry and the entries added in advance that
   * did not come true go. `current` is the record before the script when it applied, the record as it
   * is when it did not.
   */
  private async settleIndex(operation: string, threadId: string, pre: IndexEntry[], applied: IndexEntry | undefined, current: IndexEntry | undefined): Promise<void> {
    const same = (a: IndexEntry | undefined, b: IndexEntry | undefined) => a !== undefined && b !== undefined && a.state === b.state && a.u === b.u;
    const removes: IndexEntry[] = [];
    if (applied) {
      if (current && !same(current, applied)) removes.push(current);
      for (const e of pre) if (!same(e, applied) && !same(e, current)) removes.push(e);
    } else {
      for (const e of pre) if (!same(e, current)) removes.push(e);
    }
    await this.moveIndex(operation, threadId, removes, applied ? [applied] : []);
  }

  /** The thread's status entry as the record says, for settling the index after a refused write. */
  private async currentEntry(threadId: string): Promise<IndexEntry | undefined> {
    const [state, u] = (await this.command("putCheckpoint", "HMGET status", ["HMGET", `${threadBase(this.keyPrefix, threadId)}:s`, "st", "u"])) as Array<Buffer | null>;
    return entryOf(state, u);
  }

  /**
   * Runs a script that may apply a status patch (putWrites, patchThreadStatus), with the Cluster's index
   * moves around it: the patch's entry is added first (to every state's set when the patch keeps the
   * state, which the store does not know before the script), and settled after.
   */
  private async patched(operation: string, threadId: string, patch: ThreadStatusPatch | undefined, fence: LeaseFence | undefined, what: string, run: (keys: string[]) => Promise<unknown>): Promise<Reply> {
    const u = patch ? timeArg(patch.updatedAt, "status updatedAt") : "";
    const pre: IndexEntry[] = this.cluster && patch ? (patch.state !== undefined ? [patch.state] : THREAD_STATES).map((state) => ({ state, u })) : [];
    if (pre.length > 0) await this.moveIndex(operation, threadId, [], pre);
    const reply = (await run(this.statusKeys())) as Reply;
    if (Number(reply[0]) === -1) {
      if (pre.length > 0) await this.settleIndex(operation, threadId, pre, undefined, await this.currentEntry(threadId));
      throw leaseLost(threadId, fence!, reply, what);
    }
    if (pre.length > 0) {
      const applied = Number(reply[1]) === 1;
      const newState = text(reply[4] as Buffer);
      await this.settleIndex(operation, threadId, pre, applied ? { state: newState, u } : undefined, entryOf(reply[2], reply[3]));
    }
    return reply;
  }
}

/** A script's reply: a status code first (-1: the fence failed), then what the script says. */
type Reply = Array<Buffer | number | null | Buffer[]>;

/** A reply part as text ('' for nil). */
function text(value: unknown): string {
  if (value === null || value === undefined) return "";
  return Buffer.isBuffer(value) ? value.toString("utf8") : String(value);
}

function entryOf(state: unknown, u: unknown): IndexEntry | undefined {
  const s = text(state);
  return s === "" ? undefined : { state: s, u: text(u) };
}

/** The fence's token as the scripts compare it ('' for an unfenced call). */
function fenceArg(fence: LeaseFence | Lease | undefined): string {
  if (fence === undefined) return "";
  if (!Number.isSafeInteger(fence.token) || fence.token < 1) {
    throw new InvalidConfigError("fence", `${STORE_NAME}: a lease token must be a positive safe integer, got ${String(fence.token)}.`);
  }
  return String(fence.token);
}

function ttlArg(ttlMs: number, operation: string): number {
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new InvalidConfigError("ttlMs", `${STORE_NAME}.${operation}(): "ttlMs" must be a positive integer of milliseconds, got ${String(ttlMs)}.`);
  return ttlMs;
}

function timeArg(ms: number, field: string): string {
  if (typeof ms !== "number" || !Number.isFinite(ms)) throw new InvalidConfigError(field, `${STORE_NAME}: "${field}" must be a finite number of ms since the epoch, got ${String(ms)}.`);
  return String(ms);
}

/** The refusal of a fenced call, from the lease as the script saw it: {-1, token, holder, released}. */
function leaseLost(threadId: string, fence: LeaseFence | Lease, reply: Reply, operation: string): LeaseLostError {
  const token = text(reply[1]);
  if (token === "") return new LeaseLostError(threadId, fence.token, {}, operation);
  return new LeaseLostError(threadId, fence.token, { token: Number(token), holder: text(reply[3]) === "1" ? null : text(reply[2]) }, operation);
}

/** Interrupts as (task, JSON text) pairs: each task's value stays text in Redis. */
function interruptPairs(interrupts: Record<string, unknown> | null | undefined, nullAs: string | undefined): string[] {
  const out: string[] = [];
  for (const [task, value] of Object.entries(interrupts ?? {})) {
    const json = value === null ? nullAs : JSON.stringify(value);
    if (json === undefined) continue;
    out.push(task, json);
  }
  return out;
}

/** A root put's status, as the put script reads it (state '' for none). */
function putStatusArgs(threadId: string, status: ThreadStatusWrite | undefined): Arg[] {
  if (!status) return ["", "", "0", "", threadId, 0];
  const pairs = interruptPairs(status.interrupts, undefined);
  return [status.state, timeArg(status.updatedAt, "status updatedAt"), status.error !== undefined ? "1" : "0", status.error ?? "", threadId, pairs.length / 2, ...pairs];
}

/** A status patch, as the scripts' patchStatus reads it. */
function patchArgs(threadId: string, patch: ThreadStatusPatch): Arg[] {
  const pairs = patch.interrupts ? interruptPairs(patch.interrupts, "") : [];
  const addAttempts = patch.addAttempts ?? 0;
  if (!Number.isSafeInteger(addAttempts)) throw new InvalidConfigError("addAttempts", `${STORE_NAME}: "addAttempts" must be an integer, got ${String(addAttempts)}.`);
  return [
    patch.checkpointId,
    patch.state ?? "",
    patch.error === undefined ? "0" : patch.error === null ? "2" : "1",
    typeof patch.error === "string" ? patch.error : "",
    patch.interrupts === undefined ? "0" : patch.interrupts === null ? "2" : "1",
    pairs.length / 2,
    ...pairs,
    addAttempts,
    patch.attemptedAt === undefined ? "" : timeArg(patch.attemptedAt, "attemptedAt"),
    timeArg(patch.updatedAt, "status updatedAt"),
    threadId,
  ];
}

/** A status hash (HGETALL's flat list) as a record, or undefined when it is empty. */
function toStatus(threadId: string, fields: Buffer[]): ThreadStatusRecord | undefined {
  if (!fields || fields.length === 0) return undefined;
  const f = new Map<string, string>();
  const interrupts: Record<string, unknown> = {};
  let anyInterrupt = false;
  for (let i = 0; i < fields.length; i += 2) {
    const name = text(fields[i]);
    const value = text(fields[i + 1]);
    if (name.startsWith("i:")) {
      // defineProperty, so that a task id "__proto__" stays an own key.
      Object.defineProperty(interrupts, name.slice(2), { value: JSON.parse(value) as unknown, enumerable: true, writable: true, configurable: true });
      anyInterrupt = true;
    } else {
      f.set(name, value);
    }
  }
  if (!f.has("st")) return undefined;
  const record: ThreadStatusRecord = {
    threadId,
    state: f.get("st") as ThreadState,
    checkpointId: f.get("cp") ?? "",
    updatedAt: Number(f.get("u")),
    attempts: Number(f.get("a") ?? "0"),
  };
  if (f.has("e")) record.error = f.get("e")!;
  if (anyInterrupt) record.interrupts = interrupts;
  if (f.has("at")) record.attemptedAt = Number(f.get("at"));
  return record;
}

/** A checkpoint as the read scripts return it: the record member, blob members, write members. */
type Item = [Buffer, Buffer[], Buffer[]];

function toStored([member, blobs, writes]: Item, threadId: string, checkpointNs: string, chunks: ChunkRecord[]): StoredCheckpoint {
  return { record: readRecord(member, threadId, checkpointNs), blobs: blobs.map(readBlob), writes: writes.map(readWrite), chunks };
}

function chunkArgs(chunks: ChunkRecord[]): Arg[] {
  const args: Arg[] = [chunks.length];
  for (const chunk of chunks) {
    checkHash(chunk.hash);
    if (!Number.isInteger(chunk.index) || chunk.index < 0) throw new InvalidConfigError("chunk index", `${STORE_NAME}: chunk index must be a non-negative integer, got ${String(chunk.index)}.`);
    args.push(chunk.hash, String(chunk.index), Buffer.from(chunk.data.buffer, chunk.data.byteOffset, chunk.data.byteLength));
  }
  return args;
}

function check(field: string, value: string, rule: IdentifierRule): void {
  checkIdentifier(value, { ...rule, field }, STORE_NAME);
}

function checkScope(scope: ThreadScope): void {
  check("thread_id", scope.threadId, ID_RULES.threadId);
  check("checkpoint_ns", scope.checkpointNs, ID_RULES.checkpointNs);
}

/** Hashes travel in a comma-separated line of the packed values: no comma, newline or NUL. */
function checkHash(hash: string): void {
  if (typeof hash !== "string" || hash === "" || /[,\n\r\u0000]/.test(hash) || hash.length > 256) {
    throw new InvalidConfigError("chunk hash", `${STORE_NAME}: a chunk hash must be a non-empty string of at most 256 characters without commas, newlines or NUL (got ${JSON.stringify(String(hash).slice(0, 80))}).`);
  }
}

function positive(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !(value > 0)) {
    throw new InvalidConfigError(name, `${STORE_NAME}: "${name}" must be a positive number, got ${String(value)}.`);
  }
  return value;
}

function createClient(url: string | readonly string[], options: RedisConnectOptions): RedisClient {
  const urls = typeof url === "string" ? [url] : [...url];
  if (urls.length === 0) throw new InvalidConfigError("url", `${STORE_NAME}.connect: give a redis:// URL, or several for a Cluster.`);
  const parsed = urls.map((u) => {
    try {
      const p = new URL(u);
      if (p.protocol !== "redis:" && p.protocol !== "rediss:") throw new Error(`protocol ${p.protocol}`);
      return p;
    } catch (error) {
      throw new InvalidConfigError("url", `${STORE_NAME}.connect: "${u}" is not a redis:// or rediss:// URL (${(error as Error).message}).`);
    }
  });
  // A command waits through at most three reconnection attempts, then fails with RedisUnavailableError.
  const base: RedisOptions = { maxRetriesPerRequest: 3, ...options.redis };
  // Connection errors reach callers through the commands that fail (as RedisUnavailableError); the
  // client's own "error" events would otherwise be printed as unhandled at every reconnection attempt.
  const quiet = <C extends Redis | Cluster>(client: C): RedisClient => {
    client.on("error", () => {});
    return client as unknown as RedisClient;
  };
  if (urls.length === 1 && !options.cluster) return quiet(new Redis(urls[0]!, base));
  const first = parsed[0]!;
  const redisOptions: RedisOptions = {
    ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
    ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
    ...(first.protocol === "rediss:" ? { tls: {} } : {}),
    ...base,
  };
  const nodes = parsed.map((p) => ({ host: p.hostname, port: Number(p.port || 6379) }));
  return quiet(new Cluster(nodes, { redisOptions, ...options.cluster }));
}
