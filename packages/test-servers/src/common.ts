/**
 * Pieces shared by every kind of test server: free ports, Docker detection, the CI rule, the cache
 * directory of built tools, and the lifecycle of server processes this process starts.
 *
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { accessSync, appendFileSync, closeSync, constants, existsSync, openSync, readFileSync, statSync } from "node:fs";
import { request } from "node:http";
import { createServer, connect } from "node:net";
import { homedir } from "node:os";
import { basename, delimiter, join } from "node:path";

/** No server of a kind could be found or started. Under `CI=true` this always fails the run. */
export class TestServerUnavailableError extends Error {
  constructor(kind: string, tried: string[], hint: string) {
    super(
      `No ${kind} server for the tests. Tried, in order:\n` +
        tried.map((line) => `  - ${line}`).join("\n") +
        `\n${hint}`,
    );
    this.name = "TestServerUnavailableError";
  }
}

/** True when the tests run in CI, where a missing database must fail the run, never skip. */
export function inCi(): boolean {
  const value = process.env.CI;
  return value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false";
}

/** A TCP port that was free on 127.0.0.1 a moment ago (the caller retries if it lost a race). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let dockerAnswer: Promise<boolean> | undefined;

/**
 * Whether a Docker engine answers, decided within about a second and remembered for the process.
 * Looks at `DOCKER_HOST` (unix or tcp) or the default socket and asks the engine's `/_ping`, so a
 * machine with the CLI but no engine does not wait for testcontainers' own, slower, discovery.
 */
export function dockerAvailable(timeoutMs = 1500): Promise<boolean> {
  dockerAnswer ??= pingDocker(timeoutMs);
  return dockerAnswer;
}

async function pingDocker(timeoutMs: number): Promise<boolean> {
  const host = process.env.DOCKER_HOST;
  if (host?.startsWith("tcp://")) {
    const url = new URL(host.replace(/^tcp:/, "http:"));
    return new Promise((resolve) => {
      const socket = connect({ host: url.hostname, port: Number(url.port || 2375) });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(timeoutMs, () => done(false));
      socket.once("connect", () => done(true));
      socket.once("error", () => done(false));
    });
  }
  const socketPath = host?.startsWith("unix://") ? host.slice("unix://".length) : "/var/run/docker.sock";
  if (!existsSync(socketPath)) return false;
  return new Promise((resolve) => {
    const req = request({ socketPath, path: "/_ping", method: "GET", timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("timeout", () => {
      req.destroy();
      resolve(false);
    });
    req.on("error", () => resolve(false));
    req.end();
  });
}

/** A short random suffix for database, schema and directory names. */
export function randomSuffix(): string {
  return `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Environment variable naming the directory where `scripts/setup.sh` caches the tools it builds. */
export const CACHE_DIR_ENV = "RESUMABLE_CACHE_DIR";

/**
 * Where `scripts/setup.sh` keeps what no distribution package provides (moto's venv, the FerretDB
 * binary): `$RESUMABLE_CACHE_DIR`, else `~/.cache/resumable`.
 */
export function cacheDir(): string {
  const fromEnv = process.env[CACHE_DIR_ENV];
  return fromEnv ? fromEnv : join(homedir(), ".cache", "resumable");
}

/** Where a server came from: the environment, the vitest global setup, or this process. */
export type ServerSource = "env" | "provided" | "local" | "in-process" | "container";

/** The first executable named `name` on `PATH`, else in one of `extraDirs`. */
export function findExecutable(name: string, extraDirs: string[] = []): string | undefined {
  for (const dir of [...(process.env.PATH ?? "").split(delimiter), ...extraDirs]) {
    const found = dir ? executableIn(dir, name) : undefined;
    if (found) return found;
  }
  return undefined;
}

/** `dir/name` when it is an executable file, else undefined. */
export function executableIn(dir: string, name: string): string | undefined {
  const candidate = join(dir, name);
  try {
    accessSync(candidate, constants.X_OK);
    return statSync(candidate).isFile() ? candidate : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The value the vitest global setup `provide`d under `key`, or undefined outside a vitest worker (or
 * when nothing was provided), so every `get*()` also works from plain scripts.
 */
export async function injected(key: string): Promise<string | undefined> {
  try {
    const vitest = await import("vitest");
    const value = (vitest.inject as (key: string) => unknown)(key);
    return typeof value === "string" && value !== "" ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A per-process memo that survives vitest's per-file module isolation within one worker. */
export function processMemo<T>(name: string): { value?: Promise<T> } {
  const store = globalThis as Record<string, unknown>;
  const key = `__resumableTestServer_${name}`;
  return (store[key] ??= {}) as { value?: Promise<T> };
}

/** Resolves once `check` returns true; rejects after `timeoutMs` with the last error seen. */
export async function waitUntil(
  what: string,
  check: () => Promise<boolean>,
  { timeoutMs = 30_000, intervalMs = 50, abort }: { timeoutMs?: number; intervalMs?: number; abort?: () => string | undefined } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    const reason = abort?.();
    if (reason) throw new Error(`${what}: ${reason}`);
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? ` (last error: ${lastError.message})` : "";
      throw new Error(`${what}: not ready after ${timeoutMs} ms${detail}`);
    }
    await sleep(intervalMs);
  }
}

/** Waits `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The last `chars` characters of a log file, for error messages ("" when there is none). */
export function logTail(file: string, chars = 2000): string {
  try {
    return readFileSync(file, "utf8").slice(-chars);
  } catch {
    return "";
  }
}

/** A server process this process started; it is also ended by the reaper if this process dies. */
export interface ManagedProcess {
  readonly pid: number;
  /** Resolves when the process has exited, for whatever reason. */
  readonly exited: Promise<void>;
  /** Whether it is still running. */
  running(): boolean;
  /** Sends `signal` (SIGKILL by default) and waits until the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts a long-running server process with its output appended to `logFile`. It is not waited for
 * (this process may exit while it runs), and the reaper ends it should this process die first.
 */
export function spawnServer(command: string, args: string[], options: { logFile: string; cwd?: string; env?: NodeJS.ProcessEnv }): ManagedProcess {
  const fd = openSync(options.logFile, "a");
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", fd, fd] });
  } finally {
    closeSync(fd);
  }
  let done = false;
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => {
      done = true;
      resolve();
    });
    child.once("error", (error) => {
      done = true;
      appendFileSync(options.logFile, `\nspawn ${command} failed: ${error.message}\n`);
      resolve();
    });
  });
  child.unref();
  if (child.pid !== undefined) reap({ pid: child.pid, name: basename(command) });
  return {
    pid: child.pid ?? -1,
    exited,
    running: () => !done,
    async kill(signal = "SIGKILL") {
      if (done) return;
      child.kill(signal);
      await exited;
    },
  };
}

let reaperProcess: ChildProcess | undefined;

/**
 * Tells this process's reaper to end `pid` (if its command line still names `name`) and to remove
 * `dir` when this process exits, even by SIGKILL: the reaper, detached, waits for its stdin to close,
 * which the kernel does when this process dies for any reason.
 */
export function reap(what: { pid?: number; name?: string; dir?: string }): void {
  if (!reaperProcess) {
    reaperProcess = spawn(process.execPath, ["-e", REAPER_SOURCE], { detached: true, stdio: ["pipe", "ignore", "ignore"] });
    reaperProcess.unref();
    (reaperProcess.stdin as unknown as { unref?: () => void }).unref?.();
    // A reaper that died (it should not) must not take this process down with EPIPE.
    reaperProcess.stdin?.on("error", () => {});
  }
  reaperProcess.stdin?.write(`${JSON.stringify(what)}\n`);
}

/** Ends the registered processes (SIGTERM, then SIGKILL after 5 s), then removes the directories. */
const REAPER_SOURCE = `
const fs = require("node:fs");
const pids = new Map(); const dirs = new Set();
for (const s of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(s, () => {});
let buffer = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  buffer += chunk;
  let i;
  while ((i = buffer.indexOf("\\n")) >= 0) {
    const line = buffer.slice(0, i); buffer = buffer.slice(i + 1);
    try {
      const m = JSON.parse(line);
      if (m.pid > 0) pids.set(m.pid, m.name || "");
      if (m.dir) dirs.add(m.dir);
    } catch {}
  }
});
process.stdin.on("end", finish); process.stdin.on("close", finish);
function alive(pid, name) {
  try { process.kill(pid, 0); } catch { return false; }
  try {
    const stat = fs.readFileSync("/proc/" + pid + "/stat", "utf8");
    if (/\\) Z /.test(stat)) return false;
    return fs.readFileSync("/proc/" + pid + "/cmdline", "utf8").includes(name);
  } catch { return !fs.existsSync("/proc/self"); }
}
let done = false;
function finish() {
  if (done) return; done = true;
  const live = () => [...pids].filter(([pid, name]) => alive(pid, name)).map(([pid]) => pid);
  for (const pid of live()) { try { process.kill(pid, "SIGTERM"); } catch {} }
  const deadline = Date.now() + 5000;
  const tick = () => {
    const left = live();
    if (left.length > 0 && Date.now() < deadline) return setTimeout(tick, 50);
    for (const pid of left) { try { process.kill(pid, "SIGKILL"); } catch {} }
    setTimeout(() => {
      for (const dir of dirs) { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} }
      process.exit(0);
    }, left.length > 0 ? 200 : 0);
  };
  tick();
}
`;

/** Whether something accepts TCP connections on `host:port` within `timeoutMs`. */
export function tcpReachable(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * Runs `start` with fresh free ports until it succeeds, up to `attempts` times: between picking a
 * port and binding it another process may take it.
 */
export async function withFreshPorts<T>(count: number, start: (ports: number[]) => Promise<T>, attempts = 4): Promise<T> {
  let lastError: unknown;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const ports = new Set<number>();
    while (ports.size < count) ports.add(await freePort());
    try {
      return await start([...ports]);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * `get()`'s server, or `undefined` when it throws, so that a suite may skip; except under `CI=true`,
 * where the error goes on: CI never skips a database silently.
 */
export async function orUndefinedOutsideCi<T>(get: () => Promise<T>): Promise<T | undefined> {
  try {
    return await get();
  } catch (error) {
    if (inCi()) throw error;
    return undefined;
  }
}

/** The status code of an HTTP GET of `url`, or undefined when nothing answers within `timeoutMs`. */
export function httpStatus(url: string, timeoutMs = 1000): Promise<number | undefined> {
  return new Promise((resolve) => {
    const req = request(url, { method: "GET", timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("timeout", () => {
      req.destroy();
      resolve(undefined);
    });
    req.on("error", () => resolve(undefined));
    req.end();
  });
}
