/**
 * Redis in the benchmark: Resumable's `RedisSaver` on a server with an fsynced append-only file, and
 * LangChain's Redis saver, which cannot run on plain Redis (it needs RedisJSON and RediSearch).
 *
 * The server: `RESUMABLE_REDIS_URL` when set (its persistence settings are reported as found), else a
 * server of the benchmark's own started with `--appendonly yes --appendfsync always` on the real
 * disk, so every acknowledged write is fsynced, as the `sync` figures need. Its floors are `PING` and
 * a one-key `SET` (committed: acknowledged after the AOF fsync).
 *
 * @module
 */
import { startDisposableRedis } from "@resumable/test-servers";
import type { ResumableSaver } from "@resumable/core";
import type { BackendInstance, BackendSpec, ByteSize, Floor } from "./backends.js";
import { RoundTripCounter } from "./counters.js";

/** What the benchmark uses of `@resumable/redis`. */
interface RedisClientLike {
  callBuffer(...args: [string, ...Array<string | Buffer | number>]): Promise<unknown>;
  quit(): Promise<unknown>;
}
interface ResumableRedisModule {
  RedisStore: { connect(url: string, options?: { keyPrefix?: string }): { client: RedisClientLike } };
  RedisSaver: new (store: unknown) => ResumableSaver;
}

/**
 * Loaded from the package's sources (the benchmark runs under tsx with the `dev-source` condition),
 * so that the benchmark needs no dependency of its own on `@resumable/redis` or `ioredis`.
 */
async function loadResumableRedis(): Promise<ResumableRedisModule | string> {
  try {
    const specifier = new URL("../../packages/redis/src/index.ts", import.meta.url).href;
    const mod = (await import(specifier)) as Partial<ResumableRedisModule>;
    if (typeof mod.RedisSaver !== "function" || typeof mod.RedisStore !== "function") return "not available (@resumable/redis exports no RedisSaver)";
    return mod as ResumableRedisModule;
  } catch (error) {
    return `not available (@resumable/redis does not load: ${(error as Error).message.split("\n")[0]})`;
  }
}

interface BenchRedis {
  url: string;
  origin: string;
}

let server: Promise<BenchRedis> | undefined;

/** The run's Redis, started once (and stopped by test-servers when the process exits). */
function benchRedis(): Promise<BenchRedis> {
  server ??= (async () => {
    const fromEnv = process.env.RESUMABLE_REDIS_URL;
    if (fromEnv) return { url: fromEnv, origin: "RESUMABLE_REDIS_URL" };
    const own = await startDisposableRedis();
    return { url: own.url, origin: "a server the benchmark started" };
  })();
  server.catch(() => {
    server = undefined;
  });
  return server;
}

const text = (reply: unknown): string => (Buffer.isBuffer(reply) ? reply.toString("utf8") : String(reply));

async function serverNote(client: RedisClientLike, origin: string): Promise<string> {
  const info = text(await client.callBuffer("INFO", "server"));
  const version = /redis_version:(\S+)/.exec(info)?.[1] ?? "?";
  const config = async (name: string) => text(((await client.callBuffer("CONFIG", "GET", name)) as unknown[])[1]);
  return `Redis ${version} (${origin}): appendonly=${await config("appendonly")}, appendfsync=${await config("appendfsync")}, save="${await config("save")}"`;
}

/**
 * Logical bytes: every key under the prefix, plus what it holds (string bytes, hash fields and
 * values, sorted-set members). Physical: `MEMORY USAGE key SAMPLES 0` of each (exact). Keys are
 * found with SCAN, which is fine for a measurement (the store itself never scans).
 */
async function measureRedis(client: RedisClientLike, prefix: string): Promise<ByteSize> {
  let logical = 0;
  let physical = 0;
  let cursor = "0";
  do {
    const [next, keys] = (await client.callBuffer("SCAN", cursor, "MATCH", `${prefix}*`, "COUNT", 1000)) as [Buffer, Buffer[]];
    cursor = next.toString();
    for (const key of keys) {
      logical += key.length;
      const type = text(await client.callBuffer("TYPE", key));
      if (type === "string") logical += Number(await client.callBuffer("STRLEN", key));
      else if (type === "hash") for (const part of (await client.callBuffer("HGETALL", key)) as Buffer[]) logical += part.length;
      else if (type === "zset") for (const member of (await client.callBuffer("ZRANGE", key, 0, -1)) as Buffer[]) logical += member.length;
      physical += Number(await client.callBuffer("MEMORY", "USAGE", key, "SAMPLES", 0));
    }
  } while (cursor !== "0");
  return { logical, physical };
}

let sequence = 0;

/** Resumable's `RedisSaver`. */
export const resumableRedis: BackendSpec = {
  id: "resumable-redis",
  label: "Resumable Redis",
  owner: "resumable",
  database: "redis",
  embedded: false,
  notes: [],
  async unavailable() {
    const mod = await loadResumableRedis();
    if (typeof mod === "string") return mod;
    try {
      await benchRedis();
      return undefined;
    } catch (error) {
      return `no Redis server found (${(error as Error).message.split("\n")[0]})`;
    }
  },
  async open(_ctx, tag) {
    const mod = await loadResumableRedis();
    if (typeof mod === "string") throw new Error(mod);
    const { url, origin } = await benchRedis();
    sequence += 1;
    const keyPrefix = `bench:${tag.replace(/[^a-z0-9]+/gi, "_")}_${process.pid}_${sequence}:`;
    const store = mod.RedisStore.connect(url, { keyPrefix });
    const saver = new mod.RedisSaver(store);
    await saver.setup();
    // The floors on a connection of their own, so they never queue behind the saver's commands.
    const floorClient = mod.RedisStore.connect(url, { keyPrefix: `${keyPrefix}floor:` }).client;
    const floor: Floor = {
      label: "PING",
      op: () => floorClient.callBuffer("PING"),
      writeLabel: "one-key SET, acknowledged after the AOF write",
      writeOp: () => floorClient.callBuffer("SET", `${keyPrefix}floor`, "1"),
    };
    if (this.notes.length === 0) {
      this.notes.push(await serverNote(floorClient, origin));
      this.notes.push("bytes: logical = key names + string bytes, hash fields and values, sorted-set members under the saver's key prefix; physical = MEMORY USAGE (SAMPLES 0) of each key");
    }
    // Round trips: every command the store reports through its instrument hook.
    const roundTrips = new RoundTripCounter();
    saver.store.instrument?.(() => roundTrips.hit());
    const instance: BackendInstance = {
      saver,
      measureBytes: async () => {
        await floorClient.callBuffer("DEL", `${keyPrefix}floor`);
        return measureRedis(floorClient, keyPrefix);
      },
      floor,
      roundTrips,
      close: async () => {
        await saver.close();
        await deleteKeys(floorClient, keyPrefix);
        await floorClient.quit();
      },
    };
    return instance;
  },
};

async function deleteKeys(client: RedisClientLike, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = (await client.callBuffer("SCAN", cursor, "MATCH", `${prefix}*`, "COUNT", 1000)) as [Buffer, Buffer[]];
    cursor = next.toString();
    if (keys.length > 0) await client.callBuffer("DEL", ...keys);
  } while (cursor !== "0");
}

/**
 * What `@langchain/langgraph-checkpoint-redis` 1.0.11 does on Redis 7.0.15 without modules, as
 * recorded on this machine (2026-12-01, installed outside the workspace: it pulls node-redis 4 with
 * five module clients, and is not a dependency of the benchmark).
 */
export const LANGCHAIN_REDIS_ERROR =
  `fromUrl() only logs "Failed to create index checkpoints: ERR unknown command 'FT.CREATE', with args beginning with: 'checkpoints' 'ON' 'JSON' ..." ` +
  `(and the same for checkpoint_blobs and checkpoint_writes); its first put() throws ErrorReply "ERR unknown command 'JSON.SET', with args beginning with: 'checkpoint:t::1' '$' ..."`;

/** LangChain's Redis saver: listed, never run here, with the reason checked against the server. */
export const langchainRedis: BackendSpec = {
  id: "langchain-redis",
  label: "LangChain Redis",
  owner: "langchain",
  database: "redis",
  embedded: false,
  notes: [],
  async unavailable() {
    const mod = await loadResumableRedis();
    if (typeof mod === "string") return `needs RedisJSON and RediSearch (${LANGCHAIN_REDIS_ERROR})`;
    let found: BenchRedis;
    try {
      found = await benchRedis();
    } catch {
      return `needs RedisJSON and RediSearch, and no Redis server was found`;
    }
    const client = mod.RedisStore.connect(found.url).client;
    try {
      const info = (await client.callBuffer("COMMAND", "INFO", "JSON.SET", "FT.CREATE")) as unknown[];
      const missing = ["JSON.SET", "FT.CREATE"].filter((_, i) => info[i] === null);
      const version = /redis_version:(\S+)/.exec(text(await client.callBuffer("INFO", "server")))?.[1] ?? "?";
      if (missing.length > 0) return `needs RedisJSON and RediSearch; this server (Redis ${version}) lacks ${missing.join(" and ")}: ${LANGCHAIN_REDIS_ERROR}`;
      return `not installed: this server has RedisJSON and RediSearch, but the benchmark does not depend on @langchain/langgraph-checkpoint-redis`;
    } finally {
      await client.quit();
    }
  },
  open: async () => {
    throw new Error("LangChain's Redis saver is not run by the benchmark");
  },
};
