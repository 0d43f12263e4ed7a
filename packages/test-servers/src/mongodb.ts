/**
 * MongoDB for tests. No mongod can be installed here, so the local servers are FerretDB 1.24.2 (the
 * MongoDB wire protocol over SQL), built by `scripts/setup.sh`, with either of its handlers:
 *
 * - `sqlite`: files in a temporary directory;
 * - `postgresql`: a database this package creates on the PostgreSQL test server ({@link getPostgres}).
 *
 * Each is found, in order: `RESUMABLE_MONGODB_URL`, the URL provided by the vitest global setup, a
 * local FerretDB this process starts, a container of the real `mongo` image when a Docker engine
 * answers. FerretDB lacks some of MongoDB (no transactions, no TTL indexes, no `$lookup`): check
 * {@link MongoDbServer.engine} before relying on those.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import {
  TestServerUnavailableError,
  cacheDir,
  dockerAvailable,
  executableIn,
  httpStatus,
  injected,
  logTail,
  orUndefinedOutsideCi,
  processMemo,
  randomSuffix,
  reap,
  spawnServer,
  waitUntil,
  withFreshPorts,
} from "./common.js";
import { createTestDatabase, getPostgres } from "./postgres.js";

/** FerretDB's storage handlers this package can start. */
export type FerretDbHandler = "sqlite" | "postgresql";

/** What serves a {@link MongoDbServer}; `external` for a URL from the environment, which may be anything. */
export type MongoDbEngine = "ferretdb-sqlite" | "ferretdb-postgresql" | "mongodb" | "external";

/** Environment variable holding the URL of a MongoDB-compatible server, used for both handlers. */
export const MONGODB_URL_ENV = "RESUMABLE_MONGODB_URL";
/** Environment variable naming the FerretDB binary (default: the cache dir's `ferretdb-1.24.2/ferretdb`). */
export const FERRETDB_BIN_ENV = "RESUMABLE_FERRETDB_BIN";
/** The FerretDB version `scripts/setup.sh` builds. */
export const FERRETDB_VERSION = "v1.24.2";
/** The keys under which the vitest global setup provides each handler's server (as JSON: `{ url, engine }`). */
export const MONGODB_PROVIDE_KEYS = { sqlite: "resumableFerretDbSqlite", postgresql: "resumableFerretDbPostgresql" } as const;
/** The image used when no FerretDB binary is found but a Docker engine answers. */
export const MONGODB_IMAGE = "mongo:7";

/** A MongoDB-compatible server the tests can use. */
export interface MongoDbServer {
  /** A connection URL without a database, e.g. `mongodb://127.0.0.1:41234/`. */
  readonly url: string;
  /** Which FerretDB handler was asked for. */
  readonly handler: FerretDbHandler;
  /** What actually serves it. */
  readonly engine: MongoDbEngine;
  /** Where the server came from. */
  readonly source: "env" | "provided" | "local" | "container";
  /** Stops the server and drops its data, when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** A database name for one test file, with a URL that selects it. */
export interface MongoTestDatabase {
  /** The database's name, e.g. `resumable_test_saver_lx3k2_ab12cd`. */
  readonly name: string;
  /** The server's URL with that database as its path (the driver's `client.db()` then picks it). */
  readonly url: string;
}

/**
 * Returns a server for this test run, finding it in order: `RESUMABLE_MONGODB_URL`, the server
 * provided by the vitest global setup for `handler`, a local FerretDB with `handler` that this process
 * starts (once per handler; stopped at exit), a `mongo` container. Throws
 * {@link TestServerUnavailableError} when none can be had.
 */
export async function getMongoDb(handler: FerretDbHandler = "sqlite"): Promise<MongoDbServer> {
  const fromEnv = process.env[MONGODB_URL_ENV];
  if (fromEnv) return { url: fromEnv, handler, engine: "external", source: "env", stop: async () => {} };
  const provided = await injected(MONGODB_PROVIDE_KEYS[handler]);
  if (provided) {
    const { url, engine } = JSON.parse(provided) as { url: string; engine: MongoDbEngine };
    return { url, handler, engine, source: "provided", stop: async () => {} };
  }
  const memo = processMemo<MongoDbServer>(`mongodb-${handler}`);
  if (!memo.value) {
    memo.value = startMongoDb(handler);
    // Observed here so that a failure is reported by the caller that awaits it, not as unhandled.
    memo.value.catch(() => {});
  }
  return memo.value;
}

/**
 * Like {@link getMongoDb}, but resolves `undefined` when none can be had, so that a suite may skip,
 * except under `CI=true`, where it throws: CI never skips a database silently.
 */
export async function findMongoDb(handler: FerretDbHandler = "sqlite"): Promise<MongoDbServer | undefined> {
  return orUndefinedOutsideCi(() => getMongoDb(handler));
}

/**
 * A database name no other caller gets, on `server` (default: {@link getMongoDb}`()`), so that test
 * files sharing one server never see each other's collections. Nothing is created: MongoDB creates a
 * database on first write; drop it with the driver's `db.dropDatabase()`.
 */
export async function createMongoTestDatabase(label = "test", server?: { url: string }): Promise<MongoTestDatabase> {
  const { url } = server ?? (await getMongoDb());
  // FerretDB maps a database to a PostgreSQL schema or SQLite file: [a-zA-Z0-9_-], at most 63 characters.
  const name = `resumable_test_${label.replace(/[^a-zA-Z0-9_]/g, "_").slice(0, 30)}_${randomSuffix()}`;
  return { name, url: withDatabase(url, name) };
}

/** `url` with its database path replaced by `name`, keeping the options (`?...`). */
function withDatabase(url: string, name: string): string {
  const hostsStart = url.indexOf("://") + 3;
  const query = url.indexOf("?", hostsStart);
  const slash = url.indexOf("/", hostsStart);
  const hostsEnd = slash >= 0 && (query < 0 || slash < query) ? slash : query >= 0 ? query : url.length;
  return `${url.slice(0, hostsEnd)}/${name}${query >= 0 ? url.slice(query) : ""}`;
}

/**
 * Starts a server with `handler` that belongs to the caller: a local FerretDB when its binary is
 * found, else a `mongo` container. Never reuses `RESUMABLE_MONGODB_URL`.
 */
export async function startMongoDb(handler: FerretDbHandler = "sqlite"): Promise<MongoDbServer> {
  const reasons: string[] = [];
  const binary = findFerretDb();
  if (binary) {
    try {
      return await startLocalFerretDb(binary, handler);
    } catch (error) {
      reasons.push(`${binary} (--handler=${handler}) failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push(`no executable ${process.env[FERRETDB_BIN_ENV] || join(cacheDir(), `ferretdb-${FERRETDB_VERSION.slice(1)}`, "ferretdb")}`);
  }
  if (await dockerAvailable()) {
    try {
      return await startContainerMongoDb(handler);
    } catch (error) {
      reasons.push(`container failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push("no Docker engine answered");
  }
  throw new TestServerUnavailableError(
    `MongoDB (FerretDB, ${handler} handler)`,
    [`${MONGODB_URL_ENV}: not set`, `a local FerretDB: ${reasons[0] ?? "not tried"}`, `a testcontainers ${MONGODB_IMAGE} container: ${reasons[1] ?? "not tried"}`],
    `Run scripts/setup.sh (it builds FerretDB ${FERRETDB_VERSION} into the cache dir with Go), or set ${MONGODB_URL_ENV}=mongodb://127.0.0.1:27017/, or start a Docker engine.`,
  );
}

/**
 * The FerretDB binary: `$RESUMABLE_FERRETDB_BIN`, else the cache dir's `ferretdb-1.24.2/ferretdb`.
 * Not from `PATH`, where another version may be: what FerretDB lacks changes between versions.
 */
export function findFerretDb(): string | undefined {
  const binary = process.env[FERRETDB_BIN_ENV] || join(cacheDir(), `ferretdb-${FERRETDB_VERSION.slice(1)}`, "ferretdb");
  return executableIn(dirname(binary), basename(binary));
}

async function startLocalFerretDb(binary: string, handler: FerretDbHandler): Promise<MongoDbServer> {
  const base = mkdtempSync(join(tmpdir(), `resumable-ferretdb-${handler}-`));
  reap({ dir: base });
  const logFile = join(base, "ferretdb.log");
  let dropDatabase = async () => {};
  try {
    let storage: string[];
    if (handler === "sqlite") {
      storage = ["--handler=sqlite", `--sqlite-url=file:${base}/`];
    } else {
      const database = await createTestDatabase(await getPostgres());
      dropDatabase = database.drop;
      storage = ["--handler=postgresql", `--postgresql-url=${database.url}`];
    }
    // FERRETDB_* variables would configure the server too; only the flags below should.
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("FERRETDB_")));
    const { child, port } = await withFreshPorts(2, async ([port, debugPort]) => {
      const args = [
        ...storage,
        `--listen-addr=127.0.0.1:${port}`,
        `--debug-addr=127.0.0.1:${debugPort}`,
        `--state-dir=${base}`,
        "--telemetry=disable",
        "--log-level=warn",
      ];
      const child = spawnServer(binary, args, { logFile, cwd: base, env });
      try {
        // /debug/readyz answers 200 once the listener and the handler's storage are up.
        await waitUntil(`ferretdb on port ${port}`, async () => (await httpStatus(`http://127.0.0.1:${debugPort}/debug/readyz`)) === 200, {
          timeoutMs: 30_000,
          abort: () => (child.running() ? undefined : `exited at start:\n${logTail(logFile)}`),
        });
      } catch (error) {
        await child.kill();
        throw error;
      }
      return { child, port: port! };
    });
    let stopped = false;
    return {
      url: `mongodb://127.0.0.1:${port}/`,
      handler,
      engine: `ferretdb-${handler}`,
      source: "local",
      async stop() {
        if (stopped) return;
        stopped = true;
        await child.kill("SIGTERM");
        await dropDatabase().catch(() => {});
        rmSync(base, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await dropDatabase().catch(() => {});
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

async function startContainerMongoDb(handler: FerretDbHandler): Promise<MongoDbServer> {
  // Imported only here: loading testcontainers costs time and needs nothing on hosts without Docker.
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer(MONGODB_IMAGE)
    .withExposedPorts(27017)
    .withWaitStrategy(Wait.forLogMessage(/Waiting for connections/))
    .start();
  const url = `mongodb://${container.getHost()}:${container.getMappedPort(27017)}/?directConnection=true`;
  return { url, handler, engine: "mongodb", source: "container", stop: async () => void (await container.stop({ timeout: 0 })) };
}

/** The form in which the vitest global setup provides a server under {@link MONGODB_PROVIDE_KEYS}. */
export function provideMongoDbValue(server: MongoDbServer): string {
  return JSON.stringify({ url: server.url, engine: server.engine });
}
