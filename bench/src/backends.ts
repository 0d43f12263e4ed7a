/**
 * The savers under test. Each backend opens a fresh, empty database per measurement, and knows how to
 * measure what it stored, its database's floor, and its round trips.
 *
 * @module
 */
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SqliteSaver as LangChainSqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { PostgresSaver as LangChainPostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { MemoryStore, ResumableSaver } from "@resumable/core";
import { SqliteSaver as ResumableSqliteSaver } from "@resumable/sqlite";
import { RoundTripCounter, countPgPool, countSqliteConnection } from "./counters.js";
import { deepBytes } from "./deep-bytes.js";
import { SqliteFloor, measureSqliteFile, sqliteSettings, type ByteSize } from "./sqlite-measure.js";
import { databaseUrl, measurePostgresDatabase, type BenchPostgres } from "./postgres-server.js";
import { langchainRedis, resumableRedis } from "./redis-backend.js";
import { resumableDynamoDb } from "./dynamodb-backend.js";
import { langchainMongoDb, resumableMongoDb } from "./mongodb-backend.js";

export type { ByteSize } from "./sqlite-measure.js";

/** The database's own cost of one operation, measured in the same run as the saver. */
export interface Floor {
  /** What one floor operation is, e.g. "empty committed transaction". */
  label: string;
  /** One floor operation. */
  op(): unknown;
  /** What one write floor operation is, e.g. "one-row insert, committed". */
  writeLabel: string;
  /** One committed write of a tiny row: what a commit that reaches the disk costs. */
  writeOp(): unknown;
}

/** An open backend on a fresh database. */
export interface BackendInstance {
  saver: BaseCheckpointSaver;
  /** Bytes stored so far, measured from the database. */
  measureBytes(): Promise<ByteSize>;
  /** The database's floor; absent for in-memory savers. */
  floor?: Floor;
  /** Counts round trips to the database; absent where there is no database to count. */
  roundTrips?: RoundTripCounter;
  /** SQLite: counts the pages commits write to the WAL between `start()` and `stop()`. */
  walPages?: WalPageCounter;
  close(): Promise<void>;
}

/** Pages written to a SQLite database's WAL (frames) while it runs; see {@link sqliteWalPages}. */
export interface WalPageCounter {
  start(): void;
  /** Pages written since `start()`. */
  stop(): number;
}

/**
 * Counts WAL frames on the saver's own connection: checkpoints the WAL to empty and turns automatic
 * checkpoints off, so the file only grows, by a frame header and a page per page a commit writes;
 * `stop()` turns automatic checkpoints back on. Used only in an unrecorded pass.
 */
function sqliteWalPages(db: Database.Database, file: string): WalPageCounter {
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  const walSize = () => (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
  let from = 0;
  return {
    start() {
      db.pragma("wal_checkpoint(TRUNCATE)");
      db.pragma("wal_autocheckpoint = 0");
      from = walSize();
    },
    stop() {
      const pages = Math.max(0, walSize() - Math.max(from, 32)) / (pageSize + 24);
      db.pragma("wal_autocheckpoint = 1000");
      return pages;
    },
  };
}

/** Everything a backend may need from the run: a scratch directory and the servers found. */
export interface BenchContext {
  workDir: string;
  postgres?: BenchPostgres;
}

/** A saver the benchmark can run. */
export interface BackendSpec {
  id: string;
  /** Short label for tables and charts. */
  label: string;
  owner: "resumable" | "langchain";
  database: "memory" | "sqlite" | "postgres" | "redis" | "dynamodb" | "mongodb";
  /** Runs in-process, with no server: part of the quick pass. */
  embedded: boolean;
  /**
   * The measurements this backend takes part in (default: all). Variants that only change a
   * durability setting take part in latency and operations, where the setting matters; storage does
   * not depend on it.
   */
  phases?: ReadonlyArray<"growth" | "latency" | "ops">;
  /** Why it cannot run here, or `undefined` when it can. */
  unavailable(ctx: BenchContext): Promise<string | undefined>;
  /** Opens a fresh, empty database; `tag` is unique within the run. */
  open(ctx: BenchContext, tag: string): Promise<BackendInstance>;
  /** Facts the report should state (fsync, journal mode, driver versions...), filled on first open. */
  notes: string[];
}

let sequence = 0;
function uniqueName(tag: string): string {
  sequence += 1;
  return `${tag.replace(/[^a-z0-9]+/gi, "_").toLowerCase()}_${process.pid}_${sequence}`;
}

/** Wraps a Resumable saver: round trips come from its store's `instrument` hook when it reports commands. */
function resumableInstance(
  saver: ResumableSaver,
  extra: Omit<BackendInstance, "saver" | "close"> & { close?: () => Promise<void> },
): BackendInstance {
  const store = saver.store;
  let roundTrips = extra.roundTrips;
  if (store.capabilities?.commandEvents && store.instrument) {
    const counter = new RoundTripCounter();
    store.instrument(() => counter.hit());
    roundTrips = counter;
  }
  return {
    saver,
    measureBytes: extra.measureBytes,
    ...(extra.floor ? { floor: extra.floor } : {}),
    ...(roundTrips ? { roundTrips } : {}),
    ...(extra.walPages ? { walPages: extra.walPages } : {}),
    close: async () => {
      await saver.close?.();
      await extra.close?.();
    },
  };
}

function sqliteDir(ctx: BenchContext, tag: string): { dir: string; file: string; floorFile: string } {
  const dir = join(ctx.workDir, uniqueName(tag));
  mkdirSync(dir, { recursive: true });
  return { dir, file: join(dir, "checkpoints.sqlite"), floorFile: join(dir, "floor.sqlite") };
}

/** The floor on a separate file, with the `synchronous` level of the saver's own connection. */
function sqliteFloor(path: string, saverDb: Database.Database): Floor & { close(): void; settings: SqliteFloor["settings"] } {
  const floor = new SqliteFloor(path, sqliteSettings(saverDb).synchronous);
  return {
    label: "empty committed transaction",
    op: () => floor.empty(),
    writeLabel: "one-row insert, committed",
    writeOp: () => floor.write(),
    settings: floor.settings,
    close: () => floor.close(),
  };
}

function describeSync(level: number): string {
  return ["OFF", "NORMAL", "FULL", "EXTRA"][level] ?? String(level);
}

const langchainMemory: BackendSpec = {
  id: "langchain-memory",
  label: "LangChain MemorySaver",
  owner: "langchain",
  database: "memory",
  embedded: true,
  notes: [],
  unavailable: async () => undefined,
  open: async () => {
    const saver = new MemorySaver();
    return {
      saver,
      measureBytes: async () => ({ logical: deepBytes({ storage: saver.storage, writes: saver.writes }), physical: null }),
      close: async () => {},
    };
  },
};

const resumableMemory: BackendSpec = {
  id: "resumable-memory",
  label: "Resumable MemoryStore",
  owner: "resumable",
  database: "memory",
  embedded: true,
  notes: [],
  unavailable: async () => undefined,
  open: async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    await saver.setup();
    const threads = (store as unknown as { threads?: unknown }).threads ?? store;
    return resumableInstance(saver, { measureBytes: async () => ({ logical: deepBytes(threads), physical: null }) });
  },
};

/**
 * LangChain's SQLite saver as users get it (it leaves `synchronous` at NORMAL, as its WAL setup
 * does), or with `synchronous` set on its connection, to compare at equal settings.
 */
function langchainSqliteSpec(synchronous?: "FULL"): BackendSpec {
  return {
    id: synchronous ? "langchain-sqlite-full" : "langchain-sqlite",
    label: synchronous ? "LangChain SQLite (FULL)" : "LangChain SQLite",
    owner: "langchain",
    database: "sqlite",
    embedded: true,
    ...(synchronous ? { phases: ["latency", "ops"] as const } : {}),
    notes: [],
    unavailable: async () => undefined,
    async open(ctx, tag) {
      const { dir, file, floorFile } = sqliteDir(ctx, tag);
      // The benchmark's own better-sqlite3 for every SQLite saver, so all run on one SQLite version.
      const db = new Database(file);
      const counter = new RoundTripCounter();
      countSqliteConnection(db, counter);
      const saver = new LangChainSqliteSaver(db);
      await saver.getTuple({ configurable: { thread_id: "setup" } });
      if (synchronous) db.pragma(`synchronous = ${synchronous}`);
      const floor = sqliteFloor(floorFile, db);
      if (this.notes.length === 0) {
        const s = sqliteSettings(db);
        this.notes.push(`SQLite ${s.version}, journal_mode=${s.journalMode}, synchronous=${describeSync(s.synchronous)} (the saver's connection)`);
      }
      return {
        saver,
        measureBytes: async () => measureSqliteFile(file),
        floor,
        roundTrips: counter,
        walPages: sqliteWalPages(db, file),
        close: async () => {
          db.close();
          floor.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

/**
 * Our SQLite saver as users get it (`synchronous` FULL: every commit fsynced before put/putWrites
 * resolves), or at NORMAL, to compare with LangChain's default at equal settings.
 */
function resumableSqliteSpec(synchronous?: "NORMAL"): BackendSpec {
  return {
    id: synchronous ? "resumable-sqlite-normal" : "resumable-sqlite",
    label: synchronous ? "Resumable SQLite (NORMAL)" : "Resumable SQLite",
    owner: "resumable",
    database: "sqlite",
    embedded: true,
    ...(synchronous ? { phases: ["latency", "ops"] as const } : {}),
    notes: [],
    unavailable: async () => undefined,
    async open(ctx, tag) {
      const { dir, file, floorFile } = sqliteDir(ctx, tag);
      const db = new Database(file);
      const saver = new ResumableSqliteSaver(db, synchronous ? { synchronous } : {});
      await saver.setup();
      const floor = sqliteFloor(floorFile, db);
      if (this.notes.length === 0) {
        const s = sqliteSettings(db);
        this.notes.push(`SQLite ${s.version}, journal_mode=${s.journalMode}, synchronous=${describeSync(s.synchronous)} (the store's connection)`);
      }
      return resumableInstance(saver, {
        measureBytes: async () => measureSqliteFile(file),
        floor,
        walPages: sqliteWalPages(db, file),
        close: async () => {
          if (db.open) db.close();
          floor.close();
          rmSync(dir, { recursive: true, force: true });
        },
      });
    },
  };
}

const langchainSqlite = langchainSqliteSpec();
const resumableSqlite = resumableSqliteSpec();

/**
 * Errors of idle connections (the server ending them, e.g. when a database is dropped at teardown)
 * must not crash the run: a query in flight still rejects and is reported where it was awaited.
 */
function ignore(): void {}

function benchPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on("error", ignore);
  return pool;
}

/** A fresh database on the server, a floor client on it, and a cleanup that drops it. */
async function postgresDatabase(server: BenchPostgres, tag: string) {
  const name = uniqueName(tag);
  const admin = new pg.Client({ connectionString: server.url });
  admin.on("error", ignore);
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = databaseUrl(server.url, name);
  const floorClient = new pg.Client({ connectionString: url });
  floorClient.on("error", ignore);
  await floorClient.connect();
  await floorClient.query("CREATE TABLE resumable_bench_floor (x integer)");
  const floor: Floor = {
    label: "SELECT 1",
    op: () => floorClient.query("SELECT 1"),
    writeLabel: "one-row insert, committed",
    writeOp: () => floorClient.query("INSERT INTO resumable_bench_floor (x) VALUES (1)"),
  };
  return {
    url,
    floor,
    async measure(): Promise<ByteSize> {
      // The floor table is the benchmark's, not the saver's: empty it so it counts for (almost) nothing.
      await floorClient.query("TRUNCATE resumable_bench_floor");
      return measurePostgresDatabase(url);
    },
    async drop() {
      await floorClient.end();
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    },
  };
}

function postgresNote(server: BenchPostgres): string {
  const s = server.settings;
  const origin =
    server.source === "bench-durable"
      ? "a server the benchmark started with PostgreSQL's durable defaults"
      : server.source === "env"
        ? "RESUMABLE_POSTGRES_URL"
        : "@resumable/test-servers";
  return `PostgreSQL ${s.version} (${origin}): fsync=${s.fsync}, synchronous_commit=${s.synchronousCommit}, full_page_writes=${s.fullPageWrites}`;
}

const langchainPostgres: BackendSpec = {
  id: "langchain-postgres",
  label: "LangChain PostgreSQL",
  owner: "langchain",
  database: "postgres",
  embedded: false,
  notes: [],
  unavailable: async (ctx) => (ctx.postgres ? undefined : "no PostgreSQL server found"),
  async open(ctx, tag) {
    const server = ctx.postgres!;
    const database = await postgresDatabase(server, tag);
    const pool = benchPool(database.url);
    const counter = new RoundTripCounter();
    countPgPool(pool, counter);
    const saver = new LangChainPostgresSaver(pool);
    await saver.setup();
    if (this.notes.length === 0) this.notes.push(postgresNote(server));
    return {
      saver,
      measureBytes: () => database.measure(),
      floor: database.floor,
      roundTrips: counter,
      close: async () => {
        await pool.end();
        await database.drop();
      },
    };
  },
};

interface ResumablePostgresModule {
  PostgresSaver: new (pool: pg.Pool) => ResumableSaver;
}

/** Loaded only when PostgreSQL is benchmarked, so the quick pass never needs the package to load. */
async function loadResumablePostgres(): Promise<ResumablePostgresModule | string> {
  try {
    const specifier = "@resumable/postgres";
    const mod = (await import(specifier)) as Partial<ResumablePostgresModule>;
    if (typeof mod.PostgresSaver !== "function") return "not available yet (@resumable/postgres exports no PostgresSaver)";
    return mod as ResumablePostgresModule;
  } catch (error) {
    return `not available yet (@resumable/postgres does not load: ${(error as Error).message.split("\n")[0]})`;
  }
}

const resumablePostgres: BackendSpec = {
  id: "resumable-postgres",
  label: "Resumable PostgreSQL",
  owner: "resumable",
  database: "postgres",
  embedded: false,
  notes: [],
  async unavailable(ctx) {
    if (!ctx.postgres) return "no PostgreSQL server found";
    const mod = await loadResumablePostgres();
    return typeof mod === "string" ? mod : undefined;
  },
  async open(ctx, tag) {
    const mod = await loadResumablePostgres();
    if (typeof mod === "string") throw new Error(mod);
    const server = ctx.postgres!;
    const database = await postgresDatabase(server, tag);
    const pool = benchPool(database.url);
    // Counted at the pool unless the store reports its own commands (resumableInstance prefers those).
    const counter = new RoundTripCounter();
    countPgPool(pool, counter);
    const saver = new mod.PostgresSaver(pool);
    await saver.setup();
    if (this.notes.length === 0) this.notes.push(postgresNote(server));
    return resumableInstance(saver, {
      measureBytes: () => database.measure(),
      floor: database.floor,
      roundTrips: counter,
      close: async () => {
        await pool.end();
        await database.drop();
      },
    });
  },
};

function notYet(id: string, label: string, database: BackendSpec["database"]): BackendSpec {
  return {
    id,
    label,
    owner: "resumable",
    database,
    embedded: false,
    notes: [],
    unavailable: async () => "not available yet",
    open: async () => {
      throw new Error(`${label} is not available yet`);
    },
  };
}

/** Every backend the benchmark knows, embedded ones first. */
export function allBackends(): BackendSpec[] {
  return [
    resumableMemory,
    langchainMemory,
    resumableSqlite,
    langchainSqlite,
    resumableSqliteSpec("NORMAL"),
    langchainSqliteSpec("FULL"),
    resumablePostgres,
    langchainPostgres,
    resumableRedis,
    langchainRedis,
    resumableDynamoDb,
    resumableMongoDb,
    langchainMongoDb,
  ];
}
