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

describe("servers a process starts itself", () => {
  const temp = mkdtempSync(join(tmpdir(), "resumable-processes-test-"));
  afterAll(() => rmSync(temp, { recursive: true, force: true }));

  it("are found and started without vitest, and ended with their files when that process is SIGKILLed", async () => {
    // Nothing from the environment: this process must start every kind itself.
    const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: temp };
    for (const name of [REDIS_URL_ENV, REDIS_CLUSTER_NODES_ENV, DYNAMODB_ENDPOINT_ENV, DYNALITE_ENDPOINT_ENV, MOTO_ENDPOINT_ENV, MONGODB_URL_ENV]) {
      delete env[name];
    }
    const child = spawn(process.execPath, ["--import", tsxLoader, fixture], { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => child.once("exit", resolve));
    try {
      await waitUntil("the fixture to print its servers", async () => output.includes("\n"), {
        timeoutMs: 60_000,
        abort: () => (child.exitCode === null ? undefined : `exited: ${output}`),
      });
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    }
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
  });
});
