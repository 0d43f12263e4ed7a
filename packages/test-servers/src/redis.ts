/**
 * Redis for tests, standalone and as a three-node cluster: from the environment, else local
 * `redis-server` processes on free loopback ports, else a testcontainers container when a Docker
 * engine answers.
 *
 * Many test files share one server, so isolate by key prefix ({@link redisKeyPrefix}), not by logical
 * database: a cluster has only database 0.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import {
  TestServerUnavailableError,
  dockerAvailable,
  executableIn,
  findExecutable,
  injected,
  logTail,
  orUndefinedOutsideCi,
  processMemo,
  randomSuffix,
  reap,
  spawnServer,
  waitUntil,
  withFreshPorts,
  type ManagedProcess,
} from "./common.js";

const run = promisify(execFile);

/** Environment variable holding the URL of a standalone Redis the tests may use, e.g. `redis://127.0.0.1:6379`. */
export const REDIS_URL_ENV = "RESUMABLE_REDIS_URL";
/** Environment variable listing a Redis Cluster's nodes, comma-separated `host:port` (one is enough). */
export const REDIS_CLUSTER_NODES_ENV = "RESUMABLE_REDIS_CLUSTER_NODES";
/** Environment variable naming a directory holding `redis-server` and `redis-cli`. */
export const REDIS_BIN_ENV = "RESUMABLE_REDIS_BIN";
/** The key under which the vitest global setup provides the standalone server's URL. */
export const REDIS_PROVIDE_KEY = "resumableRedisUrl";
/** The key under which the vitest global setup provides the cluster's nodes (as in {@link REDIS_CLUSTER_NODES_ENV}). */
export const REDIS_CLUSTER_PROVIDE_KEY = "resumableRedisClusterNodes";

/** A standalone Redis server the tests can use. */
export interface RedisServer {
  /** Connection URL, e.g. `redis://127.0.0.1:6379` (ioredis: `new Redis(url)`). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Where the server came from. */
  readonly source: "env" | "provided" | "local" | "container";
  /** Stops the server and removes its data, when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/**
 * A server this process owns, with an append-only file fsynced on every write
 * (`--appendonly yes --appendfsync always`), which a fault test may kill and restart.
 */
export interface DisposableRedisServer extends RedisServer {
  readonly source: "local" | "container";
  /** Whether writes go to an append-only file fsynced on each one (so a kill loses none acknowledged). */
  readonly appendOnly: boolean;
  /** Kills the server with SIGKILL, like a host crash: no shutdown, no final AOF rewrite. */
  kill(): Promise<void>;
  /** Starts it again on the same data directory (and, for a local server, the same port); resolves once it answers PING. */
  restart(): Promise<void>;
}

/** One node of a Redis Cluster. */
export interface RedisClusterNode {
  readonly host: string;
  readonly port: number;
}

/** A Redis Cluster the tests can use (ioredis: `new Redis.Cluster(cluster.nodes)`). */
export interface RedisCluster {
  /** Its nodes; every hash slot is served by one of them (no replicas). */
  readonly nodes: readonly RedisClusterNode[];
  /** Where the cluster came from. */
  readonly source: "env" | "provided" | "local" | "container";
  /** Stops every node and removes their data, when this process started them; otherwise does nothing. */
  stop(): Promise<void>;
}

/**
 * A key prefix no other caller gets, e.g. `resumable-test:saver:lx3k2_ab12cd:`, so that test files
 * sharing one server (or cluster) never see each other's keys. It holds no `{...}`, so it leaves
 * hash slots to the keys' own hash tags: it works the same on a cluster.
 */
export function redisKeyPrefix(label = "test"): string {
  return `resumable-test:${label.replace(/[{}\s]/g, "_")}:${randomSuffix()}:`;
}

// ---------------------------------------------------------------------------------------------
// Standalone

/**
 * Returns a standalone Redis for this test run, finding it in order: `RESUMABLE_REDIS_URL`, the URL
 * provided by the vitest global setup, a local `redis-server` this process starts (once; stopped at
 * exit; no persistence), a testcontainers container. Throws {@link TestServerUnavailableError} when
 * none can be had.
 */
export async function getRedis(): Promise<RedisServer> {
  const fromEnv = process.env[REDIS_URL_ENV];
  if (fromEnv) return external(fromEnv, "env");
  const provided = await injected(REDIS_PROVIDE_KEY);
  if (provided) return external(provided, "provided");
  const memo = processMemo<RedisServer>("redis");
  if (!memo.value) {
    memo.value = startRedis();
    // Observed here so that a failure is reported by the caller that awaits it, not as unhandled.
    memo.value.catch(() => {});
  }
  return memo.value;
}

/**
 * Like {@link getRedis}, but resolves `undefined` when no server can be had, so that a suite may
 * skip, except under `CI=true`, where it throws: CI never skips a database silently.
 */
export async function findRedis(): Promise<RedisServer | undefined> {
  return orUndefinedOutsideCi(getRedis);
}

/**
 * Starts a standalone Redis that belongs to the caller, with `--appendonly yes --appendfsync always`,
 * in a fresh data directory: a local one when `redis-server` is installed, else a container. Never
 * reuses `RESUMABLE_REDIS_URL`, since the caller may kill it. Stop it when done.
 */
export async function startDisposableRedis(): Promise<DisposableRedisServer> {
  return startRedis({ appendOnly: true });
}

/**
 * Starts a standalone Redis that belongs to the caller, like {@link startDisposableRedis}, but without
 * persistence unless `appendOnly` (`--save '' --appendonly no`: a kill loses its data).
 */
export async function startRedis({ appendOnly = false }: { appendOnly?: boolean } = {}): Promise<DisposableRedisServer> {
  const options = { appendOnly };
  const reasons: string[] = [];
  const bins = findRedisBinaries();
  if (bins) {
    try {
      return await startLocalRedis(bins.server, options);
    } catch (error) {
      reasons.push(`${bins.server} failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push(`no redis-server found in $${REDIS_BIN_ENV}, PATH or /usr/bin`);
  }
  if (await dockerAvailable()) {
    try {
      return await startContainerRedis(options);
    } catch (error) {
      reasons.push(`container failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push("no Docker engine answered");
  }
  throw unavailable("Redis", REDIS_URL_ENV, "redis://127.0.0.1:6379", reasons);
}

function external(url: string, source: "env" | "provided"): RedisServer {
  const parsed = new URL(url);
  return { url, host: parsed.hostname, port: Number(parsed.port || 6379), source, stop: async () => {} };
}

/** Paths of `redis-server` and `redis-cli`: from `$RESUMABLE_REDIS_BIN`, else `PATH`, else `/usr/bin`. */
export function findRedisBinaries(): { server: string; cli: string } | undefined {
  const fromEnv = process.env[REDIS_BIN_ENV];
  const server = fromEnv ? executableIn(fromEnv, "redis-server") : findExecutable("redis-server", ["/usr/bin", "/usr/local/bin"]);
  if (!server) return undefined;
  // redis-cli (needed only to create a cluster) is taken from beside redis-server, so the two match.
  const cli = executableIn(dirname(server), "redis-cli") ?? findExecutable("redis-cli") ?? join(dirname(server), "redis-cli");
  return { server, cli };
}

function unavailable(kind: string, envName: string, example: string, reasons: string[]): TestServerUnavailableError {
  return new TestServerUnavailableError(
    kind,
    [`${envName}: not set`, `a local server: ${reasons[0] ?? "not tried"}`, `a testcontainers container: ${reasons[1] ?? "not tried"}`],
    `Install Redis 7 (Debian: apt-get install -y redis-server; scripts/setup.sh does it), or set ${envName}=${example}, or start a Docker engine.`,
  );
}

/** The flags every local node gets: loopback only, its own directory, logs to stdout (our log file). */
function baseArgs(port: number, dir: string): string[] {
  return ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no", "--logfile", "", "--save", ""];
}

function persistenceArgs(appendOnly: boolean): string[] {
  return appendOnly ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"];
}

/** Starts `redis-server` and waits until it answers PING (not LOADING); kills it if it does not. */
async function launch(server: string, args: string[], port: number, logFile: string): Promise<ManagedProcess> {
  const child = spawnServer(server, args, { logFile });
  try {
    await waitUntil(`redis-server on port ${port}`, async () => (await redisCommand("127.0.0.1", port, ["PING"])) === "PONG", {
      timeoutMs: 30_000,
      abort: () => (child.running() ? undefined : `exited at start:\n${logTail(logFile)}`),
    });
    return child;
  } catch (error) {
    await child.kill();
    throw error;
  }
}

async function startLocalRedis(server: string, { appendOnly }: { appendOnly: boolean }): Promise<DisposableRedisServer> {
  const base = mkdtempSync(join(tmpdir(), "resumable-redis-"));
  reap({ dir: base });
  const logFile = join(base, "redis.log");
  const dataDir = join(base, "data");
  mkdirSync(dataDir);
  const argsFor = (port: number) => [...baseArgs(port, dataDir), ...persistenceArgs(appendOnly)];
  let port = 0;
  let child: ManagedProcess;
  try {
    child = await withFreshPorts(1, async ([p]) => {
      port = p!;
      return launch(server, argsFor(port), port, logFile);
    });
  } catch (error) {
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    url: `redis://127.0.0.1:${port}`,
    host: "127.0.0.1",
    port,
    source: "local",
    appendOnly,
    async stop() {
      if (stopped) return;
      stopped = true;
      // No shutdown is needed: the data goes too.
      await child.kill();
      rmSync(base, { recursive: true, force: true });
    },
    async kill() {
      await child.kill("SIGKILL");
    },
    async restart() {
      if (child.running()) throw new Error("restart(): the server is still running; kill() it first");
      child = await launch(server, argsFor(port), port, logFile);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Cluster

/**
 * Returns a Redis Cluster for this test run, finding it in order: `RESUMABLE_REDIS_CLUSTER_NODES`, the
 * nodes provided by the vitest global setup, three local `redis-server --cluster-enabled yes`
 * processes this process starts (once; stopped at exit), a testcontainers container. Throws
 * {@link TestServerUnavailableError} when none can be had.
 */
export async function getRedisCluster(): Promise<RedisCluster> {
  const fromEnv = process.env[REDIS_CLUSTER_NODES_ENV];
  if (fromEnv) return { nodes: parseNodes(fromEnv), source: "env", stop: async () => {} };
  const provided = await injected(REDIS_CLUSTER_PROVIDE_KEY);
  if (provided) return { nodes: parseNodes(provided), source: "provided", stop: async () => {} };
  const memo = processMemo<RedisCluster>("redis-cluster");
  if (!memo.value) {
    memo.value = startRedisCluster();
    memo.value.catch(() => {});
  }
  return memo.value;
}

/** Like {@link getRedisCluster}, but resolves `undefined` when none can be had, except under `CI=true`. */
export async function findRedisCluster(): Promise<RedisCluster | undefined> {
  return orUndefinedOutsideCi(getRedisCluster);
}

/** `nodes` as `host:port,host:port`, the form of {@link REDIS_CLUSTER_NODES_ENV}. */
export function formatRedisClusterNodes(nodes: readonly RedisClusterNode[]): string {
  return nodes.map((node) => `${node.host}:${node.port}`).join(",");
}

function parseNodes(value: string): RedisClusterNode[] {
  return value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
    .map((entry) => {
      const at = entry.lastIndexOf(":");
      const port = Number(entry.slice(at + 1));
      if (at <= 0 || !Number.isInteger(port)) throw new Error(`${REDIS_CLUSTER_NODES_ENV}: "${entry}" is not host:port`);
      return { host: entry.slice(0, at), port };
    });
}

/**
 * Starts a three-node cluster (no replicas, no persistence) that belongs to the caller: local
 * processes when `redis-server` and `redis-cli` are installed, else a container. Resolves once every
 * node reports `cluster_state:ok`.
 */
export async function startRedisCluster(): Promise<RedisCluster> {
  const reasons: string[] = [];
  const bins = findRedisBinaries();
  if (bins) {
    try {
      return await withFreshPorts(6, (ports) => startLocalCluster(bins.server, bins.cli, ports), 3);
    } catch (error) {
      reasons.push(`${bins.server} failed to form a cluster: ${(error as Error).message}`);
    }
  } else {
    reasons.push(`no redis-server found in $${REDIS_BIN_ENV}, PATH or /usr/bin`);
  }
  if (await dockerAvailable()) {
    try {
      return await startContainerCluster();
    } catch (error) {
      reasons.push(`container failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push("no Docker engine answered");
  }
  throw unavailable("Redis Cluster", REDIS_CLUSTER_NODES_ENV, "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002", reasons);
}

async function startLocalCluster(server: string, cli: string, ports: number[]): Promise<RedisCluster> {
  const base = mkdtempSync(join(tmpdir(), "resumable-redis-cluster-"));
  reap({ dir: base });
  const logFile = join(base, "redis.log");
  const children: ManagedProcess[] = [];
  const stopAll = async () => {
    await Promise.all(children.map((child) => child.kill()));
    rmSync(base, { recursive: true, force: true });
  };
  // Three client ports, and three cluster-bus ports given explicitly (Redis 7's `cluster-port`),
  // so the default port+10000 can neither exceed 65535 nor collide.
  const nodes = ports.slice(0, 3).map((port) => ({ host: "127.0.0.1", port }));
  try {
    // Settled, not Promise.all: a node still starting when another failed must be stopped too.
    const started = await Promise.allSettled(
      nodes.map(async ({ port }, i) => {
        const dir = join(base, String(port));
        mkdirSync(dir);
        const args = [
          ...baseArgs(port, dir),
          ...persistenceArgs(false),
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, "nodes.conf"),
          "--cluster-port",
          String(ports[3 + i]),
          "--cluster-node-timeout",
          "5000",
        ];
        children.push(await launch(server, args, port, logFile));
      }),
    );
    const failed = started.find((result) => result.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
    await run(cli, ["--cluster", "create", ...nodes.map(({ host, port }) => `${host}:${port}`), "--cluster-replicas", "0", "--cluster-yes"], {
      timeout: 60_000,
    });
    await waitForClusterOk(nodes);
  } catch (error) {
    const log = logTail(logFile);
    await stopAll();
    throw new Error(`${(error as Error).message}${log ? `\n${log}` : ""}`);
  }
  let stopped = false;
  return {
    nodes,
    source: "local",
    async stop() {
      if (stopped) return;
      stopped = true;
      await stopAll();
    },
  };
}

/** `redis-cli --cluster create` returns once slots are assigned; nodes agree a moment later. */
async function waitForClusterOk(nodes: readonly RedisClusterNode[]): Promise<void> {
  await waitUntil(
    "cluster_state:ok on every node",
    async () => {
      const infos = await Promise.all(nodes.map(({ host, port }) => redisCommand(host, port, ["CLUSTER", "INFO"])));
      return infos.every((info) => /cluster_state:ok/.test(String(info)));
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

// ---------------------------------------------------------------------------------------------
// Containers (only where a Docker engine answers; not exercised on machines without one)

interface RedisContainer {
  getHost(): string;
  getMappedPort(port: number): number;
  exec(command: string[]): Promise<{ exitCode: number; output: string }>;
  stop(options?: { timeout?: number; remove?: boolean }): Promise<unknown>;
  restart(options?: { timeout?: number }): Promise<void>;
}

async function startContainerRedis({ appendOnly }: { appendOnly: boolean }): Promise<DisposableRedisServer> {
  // Imported only here: loading testcontainers costs time and needs nothing on hosts without Docker.
  const { GenericContainer, Wait } = await import("testcontainers");
  const flags = ["--save", "''", ...persistenceArgs(appendOnly), "--dir", "/data"].join(" ");
  // Redis runs under a shell, not as PID 1, so that kill() can SIGKILL it from inside the container
  // (PID 1 ignores signals it has no handler for); the container ends with it and restarts on its data.
  const container = (await new GenericContainer("redis:7-alpine")
    .withExposedPorts(6379)
    .withCommand(["sh", "-c", `redis-server ${flags} & wait $!`])
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .start()) as unknown as RedisContainer;
  let host = container.getHost();
  let port = container.getMappedPort(6379);
  return {
    get url() {
      return `redis://${host}:${port}`;
    },
    get host() {
      return host;
    },
    get port() {
      return port;
    },
    source: "container",
    appendOnly,
    async stop() {
      await container.stop({ timeout: 0 });
    },
    async kill() {
      await container.exec(["sh", "-c", "kill -9 $(pidof redis-server)"]);
      await waitUntil("the killed container to stop", async () => !(await ping(host, port)), { timeoutMs: 10_000 });
    },
    async restart() {
      await container.restart();
      // Docker may map a new host port after a restart.
      host = container.getHost();
      port = container.getMappedPort(6379);
      await waitUntil("redis in the restarted container", () => ping(host, port));
    },
  };
}

async function startContainerCluster(): Promise<RedisCluster> {
  const { GenericContainer, Wait } = await import("testcontainers");
  // Nodes announce 127.0.0.1 and their own port, so the host ports must equal the container's:
  // clients follow MOVED redirections to exactly what the nodes announce.
  return withFreshPorts(6, async (allPorts) => {
    const ports = allPorts.slice(0, 3);
    const script = [
      ...ports.map(
        (port, i) =>
          `redis-server --port ${port} --cluster-port ${allPorts[3 + i]} --cluster-enabled yes --cluster-config-file /data/nodes-${port}.conf ` +
          `--cluster-announce-ip 127.0.0.1 --save '' --appendonly no --daemonize yes --logfile /data/${port}.log`,
      ),
      `sleep 1`,
      `redis-cli --cluster create ${ports.map((port) => `127.0.0.1:${port}`).join(" ")} --cluster-replicas 0 --cluster-yes`,
      `echo cluster-created`,
      `exec tail -f /dev/null`,
    ].join(" && ");
    const container = (await new GenericContainer("redis:7-alpine")
      .withExposedPorts(...ports.map((port) => ({ container: port, host: port })))
      .withCommand(["sh", "-c", script])
      .withWaitStrategy(Wait.forLogMessage(/cluster-created/))
      .start()) as unknown as RedisContainer;
    const nodes = ports.map((port) => ({ host: "127.0.0.1", port }));
    await waitForClusterOk(nodes);
    return { nodes, source: "container" as const, stop: async () => void (await container.stop({ timeout: 0 })) };
  }, 2);
}

// ---------------------------------------------------------------------------------------------
// A few RESP commands, so that readiness checks need no Redis client library

async function ping(host: string, port: number): Promise<boolean> {
  try {
    return (await redisCommand(host, port, ["PING"])) === "PONG";
  } catch {
    return false;
  }
}

/**
 * Sends one command over a fresh connection and resolves its reply: a simple or bulk string, an
 * integer, or null. An error reply (`-LOADING ...`, say) rejects.
 */
export function redisCommand(host: string, port: number, args: string[], timeoutMs = 2000): Promise<string | number | null> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let buffer = Buffer.alloc(0);
    const finish = (error: Error | undefined, value?: string | number | null) => {
      socket.destroy();
      if (error) reject(error);
      else resolve(value ?? null);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`no reply from ${host}:${port} within ${timeoutMs} ms`)));
    socket.once("error", (error) => finish(error));
    socket.once("connect", () => {
      const parts = args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`);
      socket.write(`*${args.length}\r\n${parts.join("")}`);
    });
    socket.on("data", (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      const lineEnd = buffer.indexOf("\r\n");
      if (lineEnd < 0) return;
      const type = String.fromCharCode(buffer[0]!);
      const line = buffer.subarray(1, lineEnd).toString("utf8");
      if (type === "+") return finish(undefined, line);
      if (type === "-") return finish(new Error(line));
      if (type === ":") return finish(undefined, Number(line));
      if (type === "$") {
        const length = Number(line);
        if (length < 0) return finish(undefined, null);
        if (buffer.length < lineEnd + 2 + length + 2) return; // wait for the rest
        return finish(undefined, buffer.subarray(lineEnd + 2, lineEnd + 2 + length).toString("utf8"));
      }
      finish(new Error(`unexpected reply type ${JSON.stringify(type)} from ${host}:${port}`));
    });
  });
}
