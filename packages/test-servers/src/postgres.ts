/**
 * PostgreSQL for tests: a URL from the environment, else a local server started from the installed
 * binaries, else a testcontainers container when a Docker engine answers.
 *
 * @module
 */
import { execFile, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { TestServerUnavailableError, dockerAvailable, freePort, inCi, randomSuffix } from "./common.js";

const run = promisify(execFile);

/** Environment variable holding the URL of a PostgreSQL server the tests may use (and create databases on). */
export const POSTGRES_URL_ENV = "RESUMABLE_POSTGRES_URL";
/** Environment variable naming a directory holding `initdb`, `pg_ctl` and `postgres`. */
export const POSTGRES_BIN_ENV = "RESUMABLE_POSTGRES_BIN";
/** The key under which the vitest global setup provides the URL to test files. */
export const POSTGRES_PROVIDE_KEY = "resumablePostgresUrl";

/** A PostgreSQL server the tests can use. */
export interface PostgresServer {
  /** A connection URL to the server's `postgres` database, as a superuser. */
  readonly url: string;
  /** Where the server came from. */
  readonly source: "env" | "provided" | "local" | "container";
  /** Stops the server and removes its data, when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/** A server this process owns, which a fault test may kill and restart. */
export interface DisposablePostgresServer extends PostgresServer {
  readonly source: "local" | "container";
  /** Kills the server abruptly (SIGKILL of the postmaster and every backend), like a host crash. */
  kill(): Promise<void>;
  /** Starts the server again on the same data (and, for a local server, the same port). */
  restart(): Promise<void>;
}

interface GlobalCache {
  server?: Promise<PostgresServer>;
}
// On globalThis so that the server outlives vitest's per-file module isolation within one worker.
const cache = ((globalThis as Record<string, unknown>).__resumablePostgresTestServer ??= {}) as GlobalCache;

/**
 * Returns a PostgreSQL server for this test run, finding it in order: `RESUMABLE_POSTGRES_URL`, the URL
 * provided by the vitest global setup, a local server this process starts (once; stopped at exit), a
 * testcontainers container. Throws {@link TestServerUnavailableError} when none can be had.
 */
export async function getPostgres(): Promise<PostgresServer> {
  const fromEnv = process.env[POSTGRES_URL_ENV];
  if (fromEnv) return { url: fromEnv, source: "env", stop: async () => {} };
  const provided = await providedUrl();
  if (provided) return { url: provided, source: "provided", stop: async () => {} };
  if (!cache.server) {
    cache.server = startDisposablePostgres();
    // Observed here so that a failure is reported by the caller that awaits it, not as unhandled.
    cache.server.catch(() => {});
  }
  return cache.server;
}

/**
 * Makes `server` the one {@link getPostgres} returns in this process. The PostgreSQL global setup
 * calls it so that other global setups of the same run (FerretDB's PostgreSQL handler) reuse its
 * server instead of starting a second one.
 */
export function sharePostgresInThisProcess(server: PostgresServer): void {
  cache.server = Promise.resolve(server);
}

/**
 * Like {@link getPostgres}, but resolves `undefined` when no server can be had, so that a suite may
 * skip, except under `CI=true`, where it throws: CI never skips a database silently.
 */
export async function findPostgres(): Promise<PostgresServer | undefined> {
  try {
    return await getPostgres();
  } catch (error) {
    if (inCi()) throw error;
    return undefined;
  }
}

async function providedUrl(): Promise<string | undefined> {
  try {
    const vitest = await import("vitest");
    const value = (vitest.inject as (key: string) => unknown)(POSTGRES_PROVIDE_KEY);
    return typeof value === "string" && value !== "" ? value : undefined;
  } catch {
    return undefined;
  }
}

function unavailable(reasons: string[] = []): TestServerUnavailableError {
  return new TestServerUnavailableError(
    "PostgreSQL",
    [
      `${POSTGRES_URL_ENV}: not set`,
      `a local server: ${reasons[0] ?? "no initdb found under /usr/lib/postgresql/*/bin, $" + POSTGRES_BIN_ENV + " or PATH"}`,
      `a testcontainers container: ${reasons[1] ?? "no Docker engine answered"}`,
    ],
    `Install PostgreSQL (Debian: apt-get install -y postgresql), or set ${POSTGRES_URL_ENV}=postgres://user:pass@host:5432/postgres ` +
      `(a role allowed to CREATE DATABASE), or start a Docker engine.`,
  );
}

/**
 * Starts a server that belongs to this process: a local one when PostgreSQL's binaries are installed,
 * else a container. Never reuses `RESUMABLE_POSTGRES_URL`, since the caller may kill it.
 */
export async function startDisposablePostgres(): Promise<DisposablePostgresServer> {
  const reasons: string[] = [];
  const binDir = findPostgresBinDir();
  if (binDir) {
    try {
      return await startLocalPostgres(binDir);
    } catch (error) {
      reasons.push(`${binDir} failed to start: ${(error as Error).message}`);
    }
  }
  if (await dockerAvailable()) {
    try {
      return await startContainerPostgres();
    } catch (error) {
      reasons.push(reasons.length === 0 ? "not installed" : reasons[0]!, `container failed to start: ${(error as Error).message}`);
      throw unavailable(reasons.slice(-2));
    }
  }
  throw unavailable(reasons);
}

/** The directory holding `initdb` and `pg_ctl`: `$RESUMABLE_POSTGRES_BIN`, the newest Debian install, or PATH. */
export function findPostgresBinDir(): string | undefined {
  const fromEnv = process.env[POSTGRES_BIN_ENV];
  if (fromEnv) return existsSync(join(fromEnv, "initdb")) ? fromEnv : undefined;
  const root = "/usr/lib/postgresql";
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((name) => /^\d+$/.test(name) && existsSync(join(root, name, "bin", "initdb")))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], "bin");
  }
  for (const dir of (process.env.PATH ?? "").split(":")) {
    if (dir && existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl"))) return dir;
  }
  return undefined;
}

/** As root, PostgreSQL refuses to run: every command then goes through `runuser -u postgres --`. */
function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}

async function startLocalPostgres(binDir: string): Promise<DisposablePostgresServer> {
  const isRoot = process.getuid?.() === 0;
  const base = mkdtempSync(join(tmpdir(), "resumable-pg-"));
  if (isRoot) {
    const ids = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gids = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    if (ids.status !== 0) throw new Error("running as root, but there is no `postgres` user to run the server as");
    chownSync(base, Number(ids.stdout.trim()), Number(gids.stdout.trim()));
  }
  const dataDir = join(base, "data");
  const logFile = join(base, "server.log");
  const exec = async (tool: string, args: string[]) => {
    const [command, fullArgs] = asServerUser(join(binDir, tool), args);
    return run(command, fullArgs, { timeout: 60_000 });
  };
  await exec("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"]);
  // Stop the server whenever this process ends, even by SIGKILL: a detached watcher waits for its
  // stdin to close, which the kernel does when this process dies for any reason.
  const reaper = spawn(process.execPath, ["-e", REAPER_SOURCE, dataDir, base], {
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  reaper.unref();
  (reaper.stdin as unknown as { unref?: () => void }).unref?.();

  let port = 0;
  const start = async () => {
    const options = `-p ${port} -h 127.0.0.1 -k ${base} -c fsync=off -c max_connections=300`;
    await exec("pg_ctl", ["-D", dataDir, "-l", logFile, "-w", "-t", "60", "-o", options, "start"]);
  };
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    port = await freePort();
    try {
      await start();
      lastError = undefined;
      break;
    } catch (error) {
      lastError = error;
    }
  }
  if (lastError) {
    const log = existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-2000) : "";
    reaper.stdin?.end();
    throw new Error(`pg_ctl start failed: ${(lastError as Error).message}\n${log}`);
  }

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let stopped = false;
  return {
    url,
    source: "local",
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await exec("pg_ctl", ["-D", dataDir, "-m", "immediate", "-w", "stop"]);
      } catch {
        // Already down (killed by a test): the reaper below still removes the files.
      }
      reaper.stdin?.end();
    },
    async kill() {
      const pid = postmasterPid(dataDir);
      if (pid === undefined) return;
      // Children first, while they are still the postmaster's: once it dies they are reparented.
      for (const child of childPids(pid)) trySignal(child, "SIGKILL");
      trySignal(pid, "SIGKILL");
      for (let i = 0; i < 100 && (alive(pid) || childPids(pid).length > 0); i++) await sleep(50);
    },
    async restart() {
      let error: unknown;
      // A just-killed server's shared memory may linger a moment; pg_ctl refuses until it is gone.
      for (let attempt = 0; attempt < 20; attempt++) {
        try {
          await start();
          return;
        } catch (e) {
          error = e;
          await sleep(250);
        }
      }
      throw error;
    },
  };
}

/** Stops the server (immediate mode) and removes its directory once stdin closes. */
const REAPER_SOURCE = `
const fs = require("node:fs");
const [dataDir, base] = process.argv.slice(1);
process.on("SIGINT", () => {}); process.on("SIGTERM", () => {}); process.on("SIGHUP", () => {});
process.stdin.on("data", () => {});
process.stdin.on("close", finish); process.stdin.on("end", finish);
let done = false;
function finish() {
  if (done) return; done = true;
  let pid;
  try { pid = Number(fs.readFileSync(dataDir + "/postmaster.pid", "utf8").split("\\n")[0]); } catch {}
  let isPostgres = false;
  try { isPostgres = pid > 0 && fs.readFileSync("/proc/" + pid + "/cmdline", "utf8").includes("postgres"); } catch {}
  if (isPostgres) { try { process.kill(pid, "SIGQUIT"); } catch {} }
  const deadline = Date.now() + 10000;
  const tick = () => {
    let running = false;
    if (isPostgres) { try { process.kill(pid, 0); running = true; } catch {} }
    if (running && Date.now() < deadline) return setTimeout(tick, 50);
    try { fs.rmSync(base, { recursive: true, force: true }); } catch {}
    process.exit(0);
  };
  tick();
}
`;

function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function childPids(parent: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // Field 4 is the parent pid; the command name (field 2) may hold spaces, so split after ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === parent) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

function trySignal(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface StartedContainer {
  getConnectionUri(): string;
  stop(options?: { timeout?: number; remove?: boolean }): Promise<unknown>;
  restart(options?: { timeout?: number }): Promise<void>;
}

async function startContainerPostgres(): Promise<DisposablePostgresServer> {
  // Imported only here: loading testcontainers costs time and needs nothing on hosts without Docker.
  const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
  const container = (await new PostgreSqlContainer("postgres:15-alpine")
    .withCommand(["postgres", "-c", "fsync=off", "-c", "max_connections=300"])
    .start()) as unknown as StartedContainer;
  let url = superuserUrl(container.getConnectionUri());
  return {
    get url() {
      return url;
    },
    source: "container",
    async stop() {
      await container.stop();
    },
    async kill() {
      await container.stop({ timeout: 0, remove: false });
    },
    async restart() {
      await container.restart();
      // Docker may map a new host port after a restart.
      url = superuserUrl(container.getConnectionUri());
    },
  };
}

function superuserUrl(uri: string): string {
  const url = new URL(uri);
  url.pathname = "/postgres";
  return url.toString();
}

/** A database created for one test file. */
export interface TestDatabase {
  /** Connection URL of the new database. */
  url: string;
  /** Its name. */
  name: string;
  /** Drops it (terminating its connections). */
  drop(): Promise<void>;
}

/**
 * Creates an empty database for one test file on the test server ({@link getPostgres}), or on the
 * server given.
 */
export async function createTestDatabase(server?: { url: string }): Promise<TestDatabase> {
  const { url: serverUrl } = server ?? (await getPostgres());
  const name = `resumable_test_${randomSuffix()}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

/** A schema created for one test file. */
export interface TestSchema {
  /** Connection URL of the database holding the schema. */
  url: string;
  /** The schema's name. */
  schema: string;
  /** Drops it and everything in it. */
  drop(): Promise<void>;
}

/** Creates an empty schema for one test file in the test server's `postgres` database. */
export async function createTestSchema(server?: { url: string }): Promise<TestSchema> {
  const { url } = server ?? (await getPostgres());
  const schema = `resumable_test_${randomSuffix()}`;
  await adminQuery(url, `CREATE SCHEMA "${schema}"`);
  return { url, schema, drop: () => adminQuery(url, `DROP SCHEMA IF EXISTS "${schema}" CASCADE`) };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const pg = await import("pg");
  const Client = (pg.default ?? pg).Client;
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
