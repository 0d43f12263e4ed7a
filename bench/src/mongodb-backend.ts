/**
 * MongoDB in the benchmark: Resumable's `MongoDBSaver` and LangChain's `MongoDBSaver`
 * (`@langchain/langgraph-checkpoint-mongodb`), on the same server, each measurement in a fresh database.
 *
 * No mongod can run here, so the server is FerretDB 1.24.2 (built by `scripts/setup.sh`), which speaks
 * MongoDB's protocol over SQL. By default the benchmark starts FerretDB with its PostgreSQL handler on
 * a database of the benchmark's durable PostgreSQL (`fsync=on`, see postgres-server.ts), so a write is
 * acknowledged after PostgreSQL's fsync, as the `sync` figures need. `RESUMABLE_MONGODB_URL` names
 * another server instead (a real MongoDB), reported as found. FerretDB is not MongoDB: every query
 * scans its collection (no secondary index is used), so these figures say nothing about MongoDB's
 * speed, only about the two savers side by side on one server.
 *
 * Floors: `ping`, and a one-document insert (acknowledged, default write concern). Bytes: logical =
 * BSON size of every document the saver wrote, physical = what PostgreSQL holds for that database.
 *
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { ResumableSaver } from "@resumable/core";
import { FERRETDB_VERSION, findFerretDb, freePort } from "@resumable/test-servers";
import type { BackendSpec, BenchContext, ByteSize, Floor } from "./backends.js";
import { RoundTripCounter } from "./counters.js";
import { findBenchPostgres, type BenchPostgres } from "./postgres-server.js";

/** The part of either driver's `MongoClient` the benchmark uses (Resumable's is 7.x, LangChain's 6.x). */
interface Collection {
  insertOne(doc: object): Promise<unknown>;
  find(filter: object): { toArray(): Promise<object[]> };
}
interface Db {
  command(command: object): Promise<Record<string, unknown>>;
  collection(name: string): Collection;
  listCollections(): { toArray(): Promise<Array<{ name: string }>> };
  dropDatabase(): Promise<unknown>;
}
interface MongoClientLike {
  db(name?: string): Db;
  close(): Promise<void>;
  on(event: "commandStarted", listener: (event: { commandName: string }) => void): unknown;
}
interface DriverModule {
  MongoClient: { connect(url: string, options?: object): Promise<MongoClientLike> };
  BSON: { calculateObjectSize(doc: object): number };
}
interface ResumableMongoModule {
  MongoDBSaver: { connect(url: string, options: { dbName: string; setup?: boolean }): Promise<ResumableSaver> };
}

/** The saver's sources (the benchmark runs them through tsx), and the driver it loads itself. */
const RESUMABLE_MONGODB = new URL("../../packages/mongodb/src/index.ts", import.meta.url);

async function loadResumable(): Promise<{ mod: ResumableMongoModule; driver: DriverModule } | string> {
  try {
    const mod = (await import(RESUMABLE_MONGODB.href)) as Partial<ResumableMongoModule>;
    if (typeof mod.MongoDBSaver?.connect !== "function") return "not available (@resumable/mongodb exports no MongoDBSaver)";
    const driver = createRequire(RESUMABLE_MONGODB)("mongodb") as DriverModule;
    return { mod: mod as ResumableMongoModule, driver };
  } catch (error) {
    return `not available (@resumable/mongodb does not load: ${(error as Error).message.split("\n")[0]})`;
  }
}

interface LangChainMongoModule {
  MongoDBSaver: new (params: { client: unknown; dbName: string }) => BaseCheckpointSaver & { setup?(): Promise<unknown[]> };
}

async function loadLangChain(): Promise<{ mod: LangChainMongoModule; driver: DriverModule; version: string } | string> {
  try {
    const require = createRequire(import.meta.url);
    const entry = require.resolve("@langchain/langgraph-checkpoint-mongodb");
    const mod = (await import("@langchain/langgraph-checkpoint-mongodb")) as unknown as LangChainMongoModule;
    // The driver LangChain's saver depends on (mongodb ^6), not the one of @resumable/mongodb.
    const fromSaver = createRequire(entry);
    const driver = fromSaver("mongodb") as DriverModule;
    const version = (fromSaver("mongodb/package.json") as { version: string }).version;
    return { mod, driver, version };
  } catch (error) {
    return `not installed (${(error as Error).message.split("\n")[0]})`;
  }
}

interface BenchMongo {
  url: string;
  note: string;
  /** The PostgreSQL database under FerretDB, where each MongoDB database is a schema; absent for a URL from the environment. */
  postgresUrl?: string;
}

let server: Promise<BenchMongo> | undefined;
const children = new Set<ChildProcess>();
/** Stopped once the run is over: FerretDB first, then a PostgreSQL of the benchmark's own. */
const cleanups: Array<() => Promise<void>> = [];
process.once("beforeExit", () => {
  for (const child of children) child.kill("SIGTERM");
  void Promise.allSettled(cleanups.splice(0).map((cleanup) => cleanup()));
});
process.once("exit", () => {
  for (const child of children) child.kill("SIGKILL");
});

/**
 * The run's MongoDB-compatible server: `RESUMABLE_MONGODB_URL`, else FerretDB with its PostgreSQL
 * handler on the benchmark's durable PostgreSQL (the run's, or one of its own), started once.
 */
function benchMongo(ctx: BenchContext): Promise<BenchMongo> {
  server ??= (async () => {
    const fromEnv = process.env.RESUMABLE_MONGODB_URL;
    if (fromEnv) return { url: fromEnv, note: "RESUMABLE_MONGODB_URL (its durability settings are the server's own)" };
    const binary = findFerretDb();
    if (!binary) throw new Error(`no FerretDB ${FERRETDB_VERSION} binary (run scripts/setup.sh) and no RESUMABLE_MONGODB_URL`);
    const postgres = ctx.postgres ?? (await ownPostgres());
    const database = `ferretdb_${process.pid}`;
    const pg = (await import("pg")).default;
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`CREATE DATABASE "${database}"`);
    await admin.end();
    const postgresUrl = new URL(postgres.url);
    postgresUrl.pathname = `/${database}`;
    const state = mkdtempSync(join(tmpdir(), "resumable-bench-ferretdb-"));
    const [port, debugPort] = [await freePort(), await freePort()];
    const child = spawn(
      binary,
      [
        "--handler=postgresql",
        `--postgresql-url=${postgresUrl.toString()}`,
        `--listen-addr=127.0.0.1:${port}`,
        `--debug-addr=127.0.0.1:${debugPort}`,
        `--state-dir=${state}`,
        "--telemetry=disable",
        "--log-level=error",
      ],
      { stdio: "ignore" },
    );
    // Unreferenced, so that the run's end (beforeExit) is what stops it.
    child.unref();
    children.add(child);
    child.once("exit", () => {
      children.delete(child);
      rmSync(state, { recursive: true, force: true });
    });
    for (let i = 0; ; i++) {
      const ready = await fetch(`http://127.0.0.1:${debugPort}/debug/readyz`).then((r) => r.ok, () => false);
      if (ready) break;
      if (i > 300 || child.exitCode !== null) throw new Error(`FerretDB did not start (exit code ${String(child.exitCode)})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const s = postgres.settings;
    return {
      url: `mongodb://127.0.0.1:${port}/`,
      postgresUrl: postgresUrl.toString(),
      note:
        `FerretDB ${FERRETDB_VERSION} (PostgreSQL handler, started by the benchmark) on PostgreSQL ${s.version} with fsync=${s.fsync}, ` +
        `synchronous_commit=${s.synchronousCommit}: every acknowledged write is committed by PostgreSQL. FerretDB scans whole collections for ` +
        `every query but _id and scalar equality, so absolute figures say nothing of MongoDB's; the two savers share the server`,
    };
  })();
  server.catch(() => {
    server = undefined;
  });
  return server;
}

let ownPostgresServer: Promise<BenchPostgres> | undefined;
/** A durable PostgreSQL of the benchmark's own when the run has none (MongoDB backends alone). */
function ownPostgres(): Promise<BenchPostgres> {
  ownPostgresServer ??= findBenchPostgres().then((found) => {
    cleanups.push(() => found.stop());
    return found;
  });
  return ownPostgresServer;
}

let sequence = 0;
function databaseName(tag: string): string {
  sequence += 1;
  // FerretDB maps a database to a PostgreSQL schema: [a-zA-Z0-9_-], at most 63 characters.
  return `bench_${tag.replace(/[^a-z0-9]+/gi, "_").toLowerCase().slice(0, 30)}_${process.pid}_${sequence}`;
}

/**
 * Bytes a MongoDB database occupies. Under FerretDB's PostgreSQL handler it is a schema: the sum of
 * `pg_total_relation_size` (tables, indexes, TOAST) of its tables after `VACUUM`, the benchmark's floor
 * table left out. FerretDB's own `dbStats` leaves TOAST out, so it undercounts large documents; it is
 * used only for a server named by `RESUMABLE_MONGODB_URL`.
 */
async function physicalBytes(server: BenchMongo, db: Db, name: string): Promise<number> {
  if (!server.postgresUrl) {
    const stats = await db.command({ dbStats: 1 });
    const floor = await db.command({ collStats: "bench_floor" }).catch(() => ({}) as Record<string, unknown>);
    return Number(stats.storageSize ?? 0) + Number(stats.indexSize ?? 0) - Number(floor.storageSize ?? 0) - Number(floor.totalIndexSize ?? 0);
  }
  const pg = (await import("pg")).default;
  const client = new pg.Client({ connectionString: server.postgresUrl });
  client.on("error", () => {});
  await client.connect();
  try {
    const tables = (
      await client.query<{ oid: string; name: string }>(
        `SELECT c.oid::text AS oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname NOT LIKE 'bench_floor%'`,
        [name],
      )
    ).rows;
    let bytes = 0;
    for (const table of tables) {
      await client.query(`VACUUM ${table.name}`);
      bytes += Number((await client.query<{ n: string }>("SELECT pg_total_relation_size($1::oid)::text AS n", [table.oid])).rows[0]!.n);
    }
    return bytes;
  } finally {
    await client.end();
  }
}

/** A client of the benchmark's own on the saver's database: floors and byte measurements. */
async function openMeasuring(driver: DriverModule, server: BenchMongo, name: string) {
  const client = await driver.MongoClient.connect(server.url, { maxPoolSize: 2 });
  const db = client.db(name);
  const floorCollection = db.collection("bench_floor");
  const floor: Floor = {
    label: "ping",
    op: () => db.command({ ping: 1 }),
    writeLabel: "one-document insert, acknowledged",
    writeOp: () => floorCollection.insertOne({ x: 1 }),
  };
  return {
    floor,
    async measure(): Promise<ByteSize> {
      let logical = 0;
      for (const { name: collection } of await db.listCollections().toArray()) {
        if (collection === "bench_floor") continue;
        for (const doc of await db.collection(collection).find({}).toArray()) logical += driver.BSON.calculateObjectSize(doc);
      }
      return { logical, physical: await physicalBytes(server, db, name) };
    },
    async close(): Promise<void> {
      await db.dropDatabase().catch(() => {});
      await client.close();
    },
  };
}

/** Resumable's `MongoDBSaver`. */
export const resumableMongoDb: BackendSpec = {
  id: "resumable-mongodb",
  label: "Resumable MongoDB",
  owner: "resumable",
  database: "mongodb",
  embedded: false,
  notes: [],
  async unavailable(ctx) {
    const loaded = await loadResumable();
    if (typeof loaded === "string") return loaded;
    return benchMongo(ctx).then(
      () => undefined,
      (error: Error) => `no MongoDB-compatible server (${error.message.split("\n")[0]})`,
    );
  },
  async open(ctx, tag) {
    const loaded = await loadResumable();
    if (typeof loaded === "string") throw new Error(loaded);
    const server = await benchMongo(ctx);
    const { url, note } = server;
    const dbName = databaseName(tag);
    const saver = await loaded.mod.MongoDBSaver.connect(url, { dbName });
    const measuring = await openMeasuring(loaded.driver, server, dbName);
    if (this.notes.length === 0) {
      this.notes.push(note);
      this.notes.push(
        "bytes: logical = BSON size of every document of the saver's database; physical = pg_total_relation_size (tables, indexes, TOAST) of the PostgreSQL schema FerretDB keeps that database in, after VACUUM",
      );
    }
    // Round trips: every command the store reports through its instrument hook.
    const roundTrips = new RoundTripCounter();
    saver.store.instrument?.(() => roundTrips.hit());
    return {
      saver,
      measureBytes: () => measuring.measure(),
      floor: measuring.floor,
      roundTrips,
      close: async () => {
        await saver.close();
        await measuring.close();
      },
    };
  },
};

/** The driver's own commands (handshakes, heartbeats, session ends) are not the saver's. */
const DRIVER_OWN = new Set(["hello", "isMaster", "ismaster", "endSessions", "ping", "buildInfo", "saslStart", "saslContinue"]);

/** LangChain's `MongoDBSaver` 1.4.1, on its own driver (mongodb 6.x) and client. */
export const langchainMongoDb: BackendSpec = {
  id: "langchain-mongodb",
  label: "LangChain MongoDB",
  owner: "langchain",
  database: "mongodb",
  embedded: false,
  notes: [],
  async unavailable(ctx) {
    const loaded = await loadLangChain();
    if (typeof loaded === "string") return loaded;
    return benchMongo(ctx).then(
      () => undefined,
      (error: Error) => `no MongoDB-compatible server (${error.message.split("\n")[0]})`,
    );
  },
  async open(ctx, tag) {
    const loaded = await loadLangChain();
    if (typeof loaded === "string") throw new Error(loaded);
    const server = await benchMongo(ctx);
    const { url, note } = server;
    const dbName = databaseName(tag);
    const client = await loaded.driver.MongoClient.connect(url, { monitorCommands: true });
    const roundTrips = new RoundTripCounter();
    client.on("commandStarted", (event) => {
      if (!DRIVER_OWN.has(event.commandName)) roundTrips.hit();
    });
    const saver = new loaded.mod.MongoDBSaver({ client, dbName });
    // It reports failures as a returned list rather than throwing.
    const problems = ((await saver.setup?.()) ?? []) as unknown[];
    if (problems.length > 0) throw new Error(`LangChain's MongoDBSaver.setup() failed: ${problems.map(String).join("; ")}`);
    const measuring = await openMeasuring(loaded.driver, server, dbName);
    if (this.notes.length === 0) {
      this.notes.push(`${note}; LangChain's saver on mongodb ${loaded.version} (its own dependency)`);
      this.notes.push("round trips: every command its client sends (command monitoring), the driver's handshakes and heartbeats excluded");
    }
    return {
      saver,
      measureBytes: () => measuring.measure(),
      floor: measuring.floor,
      roundTrips,
      close: async () => {
        await measuring.close();
        await client.close();
      },
    };
  },
};
