/// <reference path="./dynalite.d.ts" />
/**
 * DynamoDB for tests, through two emulators that differ (which is the point of having both):
 *
 * - dynalite 4, pure JavaScript, started inside this process: fast, but no transactions, TTL or
 *   streams;
 * - moto 5.2.5's server, a Python process from the venv `scripts/setup.sh` builds: transactions, the
 *   TTL API, `ReturnValuesOnConditionCheckFailure`, but items capped at 400,000 bytes. Started here,
 *   it serves one request at a time (moto-serial-server.py): moto's own server runs requests in
 *   parallel threads, and its transactions are then not atomic (a container's moto still is not).
 *
 * Each is found, in order: an endpoint in the environment, the endpoint provided by the vitest global
 * setup, one this process starts, a container (moto only, when a Docker engine answers; dynalite
 * needs none). DynamoDB Local is not used: its licence is not open source.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
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

/** The emulators this package can give. */
export type DynamoDbEmulator = "dynalite" | "moto";

/** Environment variable holding an endpoint used for both emulators, e.g. `http://127.0.0.1:8000`. */
export const DYNAMODB_ENDPOINT_ENV = "RESUMABLE_DYNAMODB_ENDPOINT";
/** Environment variable holding an endpoint used instead of dynalite (wins over {@link DYNAMODB_ENDPOINT_ENV}). */
export const DYNALITE_ENDPOINT_ENV = "RESUMABLE_DYNALITE_ENDPOINT";
/** Environment variable holding an endpoint used instead of moto (wins over {@link DYNAMODB_ENDPOINT_ENV}). */
export const MOTO_ENDPOINT_ENV = "RESUMABLE_MOTO_ENDPOINT";
/** Environment variable naming the Python venv holding `bin/moto_server` (default: the cache dir's `moto-5.2.5`). */
export const MOTO_VENV_ENV = "RESUMABLE_MOTO_VENV";
/** The moto version `scripts/setup.sh` installs. */
export const MOTO_VERSION = "5.2.5";
/** The keys under which the vitest global setup provides each emulator's endpoint. */
export const DYNAMODB_PROVIDE_KEYS = { dynalite: "resumableDynaliteEndpoint", moto: "resumableMotoEndpoint" } as const;

/** The region every emulator is addressed in (both accept any). */
export const DYNAMODB_TEST_REGION = "us-east-1";
/**
 * Dummy credentials: the SDK refuses to sign without some, and the emulators accept any. Servers hand
 * out copies, never this object: the SDK writes into the credentials it is given (a frozen object
 * makes it throw).
 */
export const DYNAMODB_TEST_CREDENTIALS: { readonly accessKeyId: string; readonly secretAccessKey: string } = {
  accessKeyId: "resumable-test",
  secretAccessKey: "resumable-test",
};

/** moto's server serving one request at a time: see the comment in that file. */
const SERIAL_MOTO_SERVER = fileURLToPath(new URL("./moto-serial-server.py", import.meta.url));

/** A DynamoDB endpoint the tests can use. */
export interface DynamoDbServer {
  /** Which emulator was asked for (with an endpoint from the environment, whatever serves it). */
  readonly emulator: DynamoDbEmulator;
  /** The endpoint URL, e.g. `http://127.0.0.1:41234`. */
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  /** `{ endpoint, region, credentials }`, ready for `new DynamoDBClient(server.clientConfig)`. */
  readonly clientConfig: {
    readonly endpoint: string;
    readonly region: string;
    readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  };
  /** Where the endpoint came from. */
  readonly source: "env" | "provided" | "in-process" | "local" | "container";
  /** Stops the emulator and drops its data, when this process started it; otherwise does nothing. */
  stop(): Promise<void>;
}

/**
 * A table name no other caller gets, e.g. `resumable_test_saver_lx3k2_ab12cd`, so that test files
 * sharing one emulator never see each other's tables. Call it once per test file (or per test).
 */
export function dynamoDbTestTableName(label = "test"): string {
  // DynamoDB allows [a-zA-Z0-9_.-], 3 to 255 characters.
  return `resumable_test_${label.replace(/[^a-zA-Z0-9_.-]/g, "_")}_${randomSuffix()}`.slice(0, 255);
}

/**
 * Returns an endpoint of `emulator` for this test run, finding it in order: its own variable
 * (`RESUMABLE_DYNALITE_ENDPOINT` / `RESUMABLE_MOTO_ENDPOINT`), `RESUMABLE_DYNAMODB_ENDPOINT`, the
 * endpoint provided by the vitest global setup, one this process starts (once; stopped at exit), and
 * for moto a container. Throws {@link TestServerUnavailableError} when none can be had.
 */
export async function getDynamoDb(emulator: DynamoDbEmulator = "dynalite"): Promise<DynamoDbServer> {
  const fromEnv = process.env[emulator === "dynalite" ? DYNALITE_ENDPOINT_ENV : MOTO_ENDPOINT_ENV] || process.env[DYNAMODB_ENDPOINT_ENV];
  if (fromEnv) return serverAt(emulator, fromEnv, "env", async () => {});
  const provided = await injected(DYNAMODB_PROVIDE_KEYS[emulator]);
  if (provided) return serverAt(emulator, provided, "provided", async () => {});
  const memo = processMemo<DynamoDbServer>(`dynamodb-${emulator}`);
  if (!memo.value) {
    memo.value = startDynamoDb(emulator);
    // Observed here so that a failure is reported by the caller that awaits it, not as unhandled.
    memo.value.catch(() => {});
  }
  return memo.value;
}

/**
 * Like {@link getDynamoDb}, but resolves `undefined` when none can be had, so that a suite may skip,
 * except under `CI=true`, where it throws: CI never skips a database silently.
 */
export async function findDynamoDb(emulator: DynamoDbEmulator = "dynalite"): Promise<DynamoDbServer | undefined> {
  return orUndefinedOutsideCi(() => getDynamoDb(emulator));
}

/** Starts an emulator that belongs to the caller, with no tables; never reuses an endpoint from the environment. */
export async function startDynamoDb(emulator: DynamoDbEmulator): Promise<DynamoDbServer> {
  return emulator === "dynalite" ? startDynalite() : startMoto();
}

function serverAt(emulator: DynamoDbEmulator, endpoint: string, source: DynamoDbServer["source"], stop: () => Promise<void>): DynamoDbServer {
  const region = DYNAMODB_TEST_REGION;
  const credentials = { ...DYNAMODB_TEST_CREDENTIALS };
  return { emulator, endpoint, region, credentials, clientConfig: { endpoint, region, credentials: { ...credentials } }, source, stop };
}

async function startDynalite(): Promise<DynamoDbServer> {
  let server: Server;
  try {
    const { default: dynalite } = await import("dynalite");
    // Tables are ACTIVE at once (the default 500 ms in CREATING would only slow the tests down).
    server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
  } catch (error) {
    throw new TestServerUnavailableError(
      "DynamoDB (dynalite)",
      [`${DYNALITE_ENDPOINT_ENV} and ${DYNAMODB_ENDPOINT_ENV}: not set`, `dynalite in this process: ${(error as Error).message}`],
      "Run `pnpm install` (dynalite is a dependency of @resumable/test-servers).",
    );
  }
  // Its sockets must not keep a test process alive after the tests are done.
  server.unref();
  const { port } = server.address() as AddressInfo;
  let stopped = false;
  return serverAt("dynalite", `http://127.0.0.1:${port}`, "in-process", async () => {
    if (stopped) return;
    stopped = true;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // The SDK keeps connections alive; close() alone would wait for them.
      server.closeAllConnections();
    });
  });
}

/**
 * `moto_server` from `$RESUMABLE_MOTO_VENV`, else from the cache dir's `moto-5.2.5` venv. Not from
 * `PATH`: a moto found there may be another version (this machine's Python has 5.2.1), and the
 * emulators' differences are what the tests pin.
 */
export function findMotoServer(): string | undefined {
  const venv = process.env[MOTO_VENV_ENV] || join(cacheDir(), `moto-${MOTO_VERSION}`);
  return executableIn(join(venv, "bin"), "moto_server");
}

async function startMoto(): Promise<DynamoDbServer> {
  const reasons: string[] = [];
  const binary = findMotoServer();
  if (binary) {
    try {
      return await startLocalMoto(binary);
    } catch (error) {
      reasons.push(`${binary} failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push(`no moto_server in ${join(process.env[MOTO_VENV_ENV] || join(cacheDir(), `moto-${MOTO_VERSION}`), "bin")}`);
  }
  if (await dockerAvailable()) {
    try {
      return await startContainerMoto();
    } catch (error) {
      reasons.push(`container failed to start: ${(error as Error).message}`);
    }
  } else {
    reasons.push("no Docker engine answered");
  }
  throw new TestServerUnavailableError(
    "DynamoDB (moto)",
    [
      `${MOTO_ENDPOINT_ENV} and ${DYNAMODB_ENDPOINT_ENV}: not set`,
      `a local moto_server: ${reasons[0] ?? "not tried"}`,
      `a testcontainers container: ${reasons[1] ?? "not tried"}`,
    ],
    `Run scripts/setup.sh (it installs moto ${MOTO_VERSION} into a venv in the cache dir), or set ${MOTO_ENDPOINT_ENV}=http://127.0.0.1:5000, or start a Docker engine.`,
  );
}

async function startLocalMoto(binary: string): Promise<DynamoDbServer> {
  const base = mkdtempSync(join(tmpdir(), "resumable-moto-"));
  reap({ dir: base });
  const logFile = join(base, "moto.log");
  try {
    const { child, port } = await withFreshPorts(1, async ([port]) => {
      // Run from its own temporary directory, so that nothing it may write lands in the repository.
      // moto's own server behind a lock, one request at a time (moto-serial-server.py says why), with
      // the Python of moto's venv.
      const python = join(dirname(binary), "python");
      const child = spawnServer(python, [SERIAL_MOTO_SERVER, "-H", "127.0.0.1", "-p", String(port)], { logFile, cwd: base, env: { ...process.env, PYTHONUNBUFFERED: "1" } });
      try {
        await waitUntil(`moto_server on port ${port}`, async () => (await httpStatus(`http://127.0.0.1:${port}/moto-api/`)) !== undefined, {
          timeoutMs: 60_000,
          intervalMs: 100,
          abort: () => (child.running() ? undefined : `exited at start:\n${logTail(logFile)}`),
        });
      } catch (error) {
        await child.kill();
        throw error;
      }
      return { child, port: port! };
    });
    let stopped = false;
    return serverAt("moto", `http://127.0.0.1:${port}`, "local", async () => {
      if (stopped) return;
      stopped = true;
      await child.kill();
      rmSync(base, { recursive: true, force: true });
    });
  } catch (error) {
    rmSync(base, { recursive: true, force: true });
    throw error;
  }
}

async function startContainerMoto(): Promise<DynamoDbServer> {
  // Imported only here: loading testcontainers costs time and needs nothing on hosts without Docker.
  const { GenericContainer, Wait } = await import("testcontainers");
  const container = await new GenericContainer(`motoserver/moto:${MOTO_VERSION}`)
    .withExposedPorts(5000)
    .withWaitStrategy(Wait.forHttp("/moto-api/", 5000))
    .start();
  const endpoint = `http://${container.getHost()}:${container.getMappedPort(5000)}`;
  return serverAt("moto", endpoint, "container", async () => void (await container.stop({ timeout: 0 })));
}
