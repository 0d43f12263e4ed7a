// The chaos test (@resumable/conformance's runChaos) of the RecoveryRunner on one SQLite file shared by
// several processes: four workers resume refund threads through leases while a killer SIGKILLs one
// of them, or freezes it past its lease TTL, every 0.5-2 s. The same run against a store whose
// fencing is switched off must fail.
import { fileURLToPath } from "node:url";

import { formatChaosReport, runChaos, runTwoProcessInvoke } from "@resumable/conformance";
import { describe, expect, it } from "vitest";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const factoryModule = fixture("chaos-sqlite-store.ts");
// The runner under test, from its sources (the suite bundles it into every worker).
const recoveryModule = fileURLToPath(new URL("../src/index.ts", import.meta.url));
const threads = Number(process.env["RESUMABLE_CHAOS_THREADS"] ?? 200);
const maxAttempts = 4;

describe("many workers on one SQLite file", () => {
  it("two processes invoking one thread at once fork it without leases, and leave it unforked with them", async () => {
    const without = await runTwoProcessInvoke({ factoryModule, recoveryModule, leases: false });
    expect(without.forks.length, "without leases the thread should fork (the bug leases fix)").toBeGreaterThan(0);
    const withLeases = await runTwoProcessInvoke({ factoryModule, recoveryModule, leases: true });
    expect(withLeases.forks).toEqual([]);
    expect(withLeases.inputsInLineage).toBe(2 * withLeases.turns);
  }, 180_000);

  it(`${threads} refund threads and a poison thread survive 4 workers SIGKILLed or frozen every 0.5-2 s`, async () => {
    const report = await runChaos({ factoryModule, recoveryModule, storeName: "SqliteStore (one file, 4 processes)", threads, maxAttempts });
    console.info(formatChaosReport(report));
    expect(report.failures).toEqual([]);
    expect(report.kills).toBeGreaterThan(0);
    expect(report.freezes).toBeGreaterThan(0);
    expect(report.done).toBe(threads);
    expect(report.poison).toMatchObject({ state: "dead", attempts: maxAttempts });
    expect(report.poison?.error).toMatch(/^dead-lettered after 4 attempts: .*policy service rejects order POISON/);
  }, 10 * 60_000);

  it("fails a store that ignores fencing: frozen workers wake up and fork the threads others took over", async () => {
    const report = await runChaos({
      factoryModule: fixture("chaos-unfenced-store.ts"),
      recoveryModule,
      storeName: "SqliteStore with fencing switched off",
      // Long enough, and struck often enough, that several freezes land on busy workers whatever the
      // machine's speed: 60 threads at the default pace finished in 3.6-4.1 s in CI with 0-1 freezes,
      // and the Redis run forked nothing.
      threads: 200,
      maxAttempts,
      freezeShare: 1,
      killEveryMs: [300, 800],
    });
    console.info(formatChaosReport(report));
    expect(report.passed).toBe(false);
    expect(report.forks.length).toBeGreaterThan(0);
  }, 10 * 60_000);
});
