import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import {
  DYNALITE_ENDPOINT_ENV,
  DYNAMODB_ENDPOINT_ENV,
  MONGODB_URL_ENV,
  MOTO_ENDPOINT_ENV,
  REDIS_CLUSTER_NODES_ENV,
  REDIS_URL_ENV,
  redisCommand,
} from "../src/index.js";
import { tcpReachable, waitUntil } from "../src/common.js";

interface Started {
  sameRedis: boolean;
  redis: { url: string; source: string };
  cluster: { nodes: Array<{ host: string; port: number }>; source: string };
  dynalite: { endpoint: string; source: string };
  moto: { endpoint: string; source: string };
  ferretdb: { url: string; source: string; engine: string };
}

// tsx's loader in this very process: its CLI would run the script in a child, which SIGKILL would miss.
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
const fixture = fileURLToPath(new URL("./fixtures/start-servers.ts", import.meta.url));
const missingFixture = fileURLToPath(new URL("./fixtures/find-missing.ts", import.meta.url));

/** The environment for a fixture that must start every kind itself: nothing from the environment. */
function ownServersEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of [REDIS_URL_ENV, REDIS_CLUSTER_NODES_ENV, DYNAMODB_ENDPOINT_ENV, DYNALITE_ENDPOINT_ENV, MOTO_ENDPOINT_ENV, MONGODB_URL_ENV]) {
    delete env[name];
  }
  return env;
}

describe("servers a process starts itself", () => {
  const temp = mkdtempSync(join(tmpdir(), "resumable-processes-test-"));
  afterAll(() => rmSync(temp, { recursive: true, force: true }));

  // Starting six servers in a fresh process takes seconds, more on a loaded two-core machine.
  it("are found and started without vitest, and ended with their files when that process is SIGKILLed", async () => {
    const env = ownServersEnv({ TMPDIR: temp });
    // stdin is a pipe the fixture waits on: should this test fail midway, the fixture ends with it.
    const child = spawn(process.execPath, ["--import", tsxLoader, fixture], { env, stdio: ["pipe", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      await waitUntil("the fixture to print its servers", async () => output.includes("\n"), {
        timeoutMs: 60_000,
        abort: () => (child.exitCode === null ? undefined : `exited: ${output}`),
      });
      const started = JSON.parse(output.split("\n")[0]!) as Started;
      expect(started.sameRedis).toBe(true);
      expect(started.redis.source).toBe("local");
      expect(started.cluster.source).toBe("local");
      expect(started.dynalite.source).toBe("in-process");
      expect(started.moto.source).toBe("local");
      expect(started.ferretdb).toMatchObject({ source: "local", engine: "ferretdb-sqlite" });

      const redisPort = Number(new URL(started.redis.url).port);
      const ports = [
        redisPort,
        ...started.cluster.nodes.map((node) => node.port),
        Number(new URL(started.moto.endpoint).port),
        Number(new URL(started.ferretdb.url).port),
      ];
      expect(await redisCommand("127.0.0.1", redisPort, ["PING"])).toBe("PONG");
      for (const port of ports) expect(await tcpReachable("127.0.0.1", port)).toBe(true);
      // Their data directories live under the child's TMPDIR (beside tsx's cache, which stays).
      const serverDirs = () => readdirSync(temp).filter((name) => name.startsWith("resumable-"));
      expect(serverDirs().length).toBeGreaterThanOrEqual(4);

      child.kill("SIGKILL");
      await exited;
      await waitUntil(
        "every server of the killed process to end and its directories to go",
        async () => {
          const answering = await Promise.all(ports.map((port) => tcpReachable("127.0.0.1", port, 200)));
          return answering.every((up) => !up) && serverDirs().length === 0;
        },
        { timeoutMs: 15_000, intervalMs: 200 },
      );
    } finally {
      child.kill("SIGKILL");
    }
  }, 120_000);

  it("throw TestServerUnavailableError under CI=true when a kind cannot be found, and resolve undefined elsewhere", async () => {
    const empty = mkdtempSync(join(temp, "empty-cache-"));
    // An empty cache dir (neither is looked for on PATH), and a Docker endpoint that refuses at once.
    const base = { RESUMABLE_CACHE_DIR: empty, DOCKER_HOST: "tcp://127.0.0.1:9", RESUMABLE_MOTO_VENV: "", RESUMABLE_FERRETDB_BIN: "" };
    const run = async (ci: string) => {
      const child = spawn(process.execPath, ["--import", tsxLoader, missingFixture], { env: ownServersEnv({ ...base, CI: ci }), stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      await new Promise((resolve) => child.once("exit", resolve));
      return JSON.parse(output.split("\n")[0]!) as Record<"moto" | "ferretdb", { resolved?: string; threw?: string; message?: string }>;
    };
    const [outsideCi, inCi] = await Promise.all([run(""), run("true")]);
    expect(outsideCi).toEqual({ moto: { resolved: "undefined" }, ferretdb: { resolved: "undefined" } });
    expect(inCi.moto.threw).toBe("TestServerUnavailableError");
    expect(inCi.moto.message).toContain("RESUMABLE_MOTO_ENDPOINT");
    expect(inCi.ferretdb.threw).toBe("TestServerUnavailableError");
    expect(inCi.ferretdb.message).toContain("scripts/setup.sh");
  }, 60_000);
});
