// The chaos test (@resumable/conformance's runChaos) of the RecoveryRunner on a standalone Redis: four
// worker processes resume refund threads through leases while a killer SIGKILLs one of them, or
// freezes it past its lease TTL, every 0.5-2 s. The server comes from @resumable/test-servers
// (RESUMABLE_REDIS_URL, else a local redis-server); in CI (CI=true) a missing Redis fails the run.
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";

import { formatChaosReport, runChaos, runTwoProcessInvoke } from "@resumable/conformance";
import { getRedis } from "@resumable/test-servers";
import { beforeAll, describe, expect, it } from "vitest";

const factoryModule = fileURLToPath(new URL("./fixtures/chaos-redis-store.ts", import.meta.url));
// The runner under test, from its sources (the suite bundles it into every worker).
const recoveryModule = fileURLToPath(new URL("../src/index.ts", import.meta.url));
const threads = Number(process.env["RESUMABLE_CHAOS_THREADS"] ?? 200);
const maxAttempts = 4;

beforeAll(async () => {
  // The worker processes read these (a factory module cannot receive arguments across processes).
  process.env["RESUMABLE_CHAOS_REDIS_URL"] = (await getRedis()).url;
  process.env["RESUMABLE_CHAOS_REDIS_PREFIX"] = `chaos-${randomBytes(4).toString("hex")}:`;
});

describe("many workers on one Redis", () => {
  it("two processes invoking one thread at once fork it without leases, and leave it unforked with them", async () => {
    const without = await runTwoProcessInvoke({ factoryModule, recoveryModule, leases: false });
    expect(without.forks.length, "without leases the thread should fork (the bug leases fix)").toBeGreaterThan(0);
    const withLeases = await runTwoProcessInvoke({ factoryModule, recoveryModule, leases: true });
    expect(withLeases.forks).toEqual([]);
    expect(withLeases.inputsInLineage).toBe(2 * withLeases.turns);
  }, 180_000);

  it(`${threads} refund threads and a poison thread survive 4 workers SIGKILLed or frozen every 0.5-2 s`, async () => {
    const report = await runChaos({ factoryModule, recoveryModule, storeName: "RedisStore (standalone, 4 processes)", threads, maxAttempts });
    console.info(formatChaosReport(report));
    expect(report.failures).toEqual([]);
    expect(report.kills).toBeGreaterThan(0);
    expect(report.freezes).toBeGreaterThan(0);
    expect(report.done).toBe(threads);
    expect(report.poison).toMatchObject({ state: "dead", attempts: maxAttempts });
    expect(report.poison?.error).toMatch(/^dead-lettered after 4 attempts: .*policy service rejects order POISON/);
  }, 10 * 60_000);
});
