// The chaos test (@resumable/conformance's runChaos) of the RecoveryRunner on DynamoDB (moto, with
// manyWorkers): four worker processes resume refund threads through leases while a killer SIGKILLs one
// of them, or freezes it past its lease TTL, every 0.5-2 s. In CI (CI=true) a missing moto fails the run.
import { fileURLToPath } from "node:url";

import { ListTablesCommand } from "@aws-sdk/client-dynamodb";
import { formatChaosReport, runChaos } from "@resumable/conformance";
import { dynamoDbTestTableName, getDynamoDb } from "@resumable/test-servers";
import { afterAll, describe, expect, it } from "vitest";

import { CHAOS_ENDPOINT_ENV, CHAOS_TABLE_PREFIX_ENV } from "./fixtures/chaos-store.js";
import { clientFor, dropTable } from "./helpers.js";

const factoryModule = fileURLToPath(new URL("./fixtures/chaos-store.ts", import.meta.url));
// The runner under test, from its sources (the suite bundles it into every worker).
const recoveryModule = fileURLToPath(new URL("../../recovery/src/index.ts", import.meta.url));
// 20, not the 200 of the other backends: moto, one Python process, resumed about 7 threads a minute at
// 200 on this 2-core machine under load (27 in 3.7 min), so 200 would take half an hour. Set
// RESUMABLE_CHAOS_THREADS=200 against a faster endpoint.
const threads = Number(process.env["RESUMABLE_CHAOS_THREADS"] ?? 20);
const maxAttempts = 4;
const prefix = dynamoDbTestTableName("chaos");

describe("many workers on one DynamoDB table (moto)", () => {
  afterAll(async () => {
    const client = await clientFor("moto");
    const tables = (await client.send(new ListTablesCommand({}))).TableNames ?? [];
    await Promise.all(tables.filter((t) => t.startsWith(prefix)).map((t) => dropTable(client, t)));
    client.destroy();
  });

  it(`${threads} refund threads and a poison thread survive 4 workers SIGKILLed or frozen every 0.5-2 s`, async () => {
    process.env[CHAOS_ENDPOINT_ENV] = (await getDynamoDb("moto")).endpoint;
    process.env[CHAOS_TABLE_PREFIX_ENV] = prefix;
    const report = await runChaos({ factoryModule, recoveryModule, storeName: "DynamoDBStore (moto, manyWorkers, 4 processes)", threads, maxAttempts, timeoutMs: 9 * 60_000 });
    console.info(formatChaosReport(report));
    expect(report.failures).toEqual([]);
    expect(report.kills).toBeGreaterThan(0);
    expect(report.freezes).toBeGreaterThan(0);
    expect(report.done).toBe(threads);
    expect(report.poison).toMatchObject({ state: "dead", attempts: maxAttempts });
    expect(report.poison?.error).toMatch(/^dead-lettered after 4 attempts: .*policy service rejects order POISON/);
  }, 11 * 60_000);
});
