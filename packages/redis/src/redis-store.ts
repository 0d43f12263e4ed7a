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
  StoreClosedError,
  StoreNotSetUpError,
  checkIdentifier,
  type BlobRecord,
  type CheckpointStore,
  type ChunkRecord,
  type HistoryAncestor,
  type HistoryQuery,
  type HistoryResult,
  type IdentifierRule,
  type ListCheckpointsQuery,
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
  readRecord,
  readWrite,
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
    };
    this.capabilities = capabilities;
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
    const args: Arg[] = [encodeComponent(record.checkpointNs), record.checkpointId, packRecord(record), ...chunkArgs(request.chunks), request.blobs.length];
    for (const blob of request.blobs) {
      check("channel", blob.channel, ID_RULES.channel);
      check(`version of channel "${blob.channel}"`, blob.version, ID_RULES.version);
      args.push(blob.channel, blob.version, packBlob(blob));
    }
    const threadId = record.threadId;
    const put = (mode: "check" | "mark", token: string) =>
      this.script("putCheckpoint", SCRIPTS.putCheckpoint, threadId, [mode, token, this.ttlMs, ...args]);
    let token = "";
    let result = this.indexed.get(threadId) === false ? 0 : Number(await put("check", ""));
    if (result === 0) {
      // Indexed before it becomes visible: a crash in between leaves an index entry without a
      // thread (skipped by list), never a thread that list() across threads cannot find.
      token = `${Date.now().toString(36)}.${randomBytes(6).toString("hex")}`;
      await this.command("putCheckpoint", "ZADD threads", ["ZADD", indexKey(this.keyPrefix), "0", indexMember(threadId, token)]);
      result = Number(await put("mark", token));
    }
    if (result === 2) {
      // Another process indexed the thread meanwhile; its entry stays, ours goes.
      await this.command("putCheckpoint", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), indexMember(threadId, token)]);
    }
    this.remember(threadId, true);
  }

  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check();
    checkScope(request);
    check("checkpoint_id", request.checkpointId, ID_RULES.checkpointId);
    const args: Arg[] = [this.ttlMs, request.mode, encodeComponent(request.checkpointNs), request.checkpointId, ...chunkArgs(request.chunks), request.writes.length];
    for (const write of request.writes) {
      check("taskId", write.taskId, ID_RULES.taskId);
      check("channel", write.channel, ID_RULES.channel);
      check("taskPath", write.taskPath, ID_RULES.taskPath);
      if (!Number.isInteger(write.idx)) throw new InvalidConfigError("idx", `${STORE_NAME}: write idx must be an integer, got ${String(write.idx)}.`);
      args.push(write.taskId, String(write.idx), packWrite(write));
    }
    await this.script("putWrites", SCRIPTS.putWrites, request.threadId, args);
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

  /** Deletes every key of the thread in one script, then its entry in the thread index. */
  async deleteThread(threadId: string): Promise<void> {
    this.check();
    check("thread_id", threadId, ID_RULES.threadId);
    const token = (await this.script("deleteThread", SCRIPTS.deleteThread, threadId, [])) as Buffer | null;
    this.remember(threadId, false);
    if (token) await this.command("deleteThread", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), indexMember(threadId, token.toString("utf8"))]);
  }

  /**
   * Removes thread-index entries whose thread no longer exists (expired by `ttlSeconds`, or a crash
   * between indexing and the first checkpoint) and were made more than `graceMs` ago (default 10
   * minutes, so a first put in flight keeps its entry). Pages through the index, one command per
   * entry; returns how many it removed. `list()` across threads skips such entries anyway.
   */
  async pruneThreadIndex(options: { graceMs?: number } = {}): Promise<number> {
    this.check();
    const graceMs = options.graceMs ?? 10 * 60_000;
    let removed = 0;
    for await (const { threadId, token, member } of this.indexEntries()) {
      const state = Number(await this.script("pruneThreadIndex", SCRIPTS.indexState, threadId, [token]));
      const made = Number.parseInt(token.split(".")[0] ?? "", 36);
      if (state !== 1 && !(Date.now() - made < graceMs)) {
        removed += Number(await this.command("pruneThreadIndex", "ZREM threads", ["ZREM", indexKey(this.keyPrefix), member]));
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
  private async script(operation: string, script: LuaScript, threadId: string, args: Arg[]): Promise<unknown> {
    const key = threadBase(this.keyPrefix, threadId);
    try {
      return await this.command(operation, `EVALSHA ${script.name}`, ["EVALSHA", script.sha, 1, key, ...args]);
    } catch (error) {
      if (!(error instanceof Error) || !/NOSCRIPT/.test(error.message)) throw error;
      return this.command(operation, `EVAL ${script.name}`, ["EVAL", script.lua, 1, key, ...args]);
    }
  }
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
