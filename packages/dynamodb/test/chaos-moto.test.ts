// The chaos test (@resumable/conformance's runChaos) of the RecoveryRunner on DynamoDB (moto, with
// manyWorkers): four worker processes resume refund threads through leases while a killer SIGKILLs one
// of them, or freezes it past its lease TTL, every 1-3 s. In CI (CI=true) a missing moto fails the run.
import { fileURLToPath } from "node:url";

import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { formatChaosReport, runChaos } from "@resumable/conformance";
import { dynamoDbTestTableName, type DynamoDbServer } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { CHAOS_ENDPOINT_ENV, CHAOS_TABLE_PREFIX_ENV } from "./fixtures/chaos-store.js";
import { clientOf, dropTable, ownMoto } from "./helpers.js";

const factoryModule = fileURLToPath(new URL("./fixtures/chaos-store.ts", import.meta.url));
// The runner under test, from its sources (the suite bundles it into every worker).
const recoveryModule = fileURLToPath(new URL("../../recovery/src/index.ts", import.meta.url));
// 20, not the 200 of the other backends: moto, one Python process, resumed about 7 threads a minute at
// 200 on this 2-core machine under load (27 in 3.7 min), so 200 would take half an hour. Set
// RESUMABLE_CHAOS_THREADS=200 against a faster endpoint.
const threads = Number(process.env["RESUMABLE_CHAOS_THREADS"] ?? 20);
const maxAttempts = 4;
// Sized for moto, which serves one request at a time at tens of milliseconds each (the test server
// serializes requests, see @resumable/test-servers): the throughput is fixed, so what decides whether an
// attempt reaches its first checkpoint before the next strike is how many attempts share it. Each
// worker resumes one thread at a time (not 4) and looks for work every 500 ms (not 100: 4 workers
// and their reviewers would send 80 listThreads a second), leases last 5 s (a renewal queued behind
// other requests for 1.5 s would lose a lease nobody took over), and the killer strikes every 1-3 s
// (not 0.5-2 s). Measured here under load 5: at the other backends' settings one attempt took 6-8 s
// and most threads were dead-lettered after 4 attempts without progress.
const chaos = { leaseTtlMs: 5000, concurrency: 1, pollIntervalMs: 500, killEveryMs: [1000, 3000] as [number, number] };
const prefix = dynamoDbTestTableName("chaos");

describe("many workers on one DynamoDB table (moto)", () => {
  let server: DynamoDbServer;
  beforeAll(async () => {
    // A moto of its own (one Python process answers one request at a time): the test files sharing
    // the run's moto (the crash sweep sends it thousands of requests) would slow every worker here.
    server = await ownMoto();
  });
  afterAll(async () => {
    if (!server) return;
    const client = clientOf(server);
    const tables = (await client.send(new ListTablesCommand({}))).TableNames ?? [];
    await Promise.all(tables.filter((t) => t.startsWith(prefix)).map((t) => dropTable(client, t)));
    client.destroy();
    await server.stop();
  });

  it(`${threads} refund threads and a poison thread survive 4 workers SIGKILLed or frozen every 1-3 s`, async () => {
    process.env[CHAOS_ENDPOINT_ENV] = server.endpoint;
    process.env[CHAOS_TABLE_PREFIX_ENV] = prefix;
    const report = await runChaos({ factoryModule, recoveryModule, storeName: "DynamoDBStore (moto, manyWorkers, 4 processes)", threads, maxAttempts, ...chaos, timeoutMs: 9 * 60_000 });
    console.info(formatChaosReport(report));
    expect(report.failures).toEqual([]);
    expect(report.kills).toBeGreaterThan(0);
    expect(report.freezes).toBeGreaterThan(0);
    expect(report.done).toBe(threads);
    expect(report.poison).toMatchObject({ state: "dead", attempts: maxAttempts });
    expect(report.poison?.error).toMatch(/^dead-lettered after 4 attempts: .*policy service rejects order POISON/);
  }, 11 * 60_000);
});
