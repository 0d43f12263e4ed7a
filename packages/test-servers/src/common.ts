/**
 * Pieces shared by every kind of test server: free ports, Docker detection, the CI rule.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { request } from "node:http";
import { createServer, connect } from "node:net";

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
