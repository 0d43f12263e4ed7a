// SIGKILL after every Redis command of a prune and of a copyThread: every checkpoint left reads as
// before, a killed prune keeps what an uncrashed one keeps, and running it again completes the job
// with no orphan (see runRetentionCrashSweep in @resumable/conformance).
import { fileURLToPath } from "node:url";

import { runRetentionCrashSweep } from "@resumable/conformance";
import { getRedis } from "@resumable/test-servers";
import { beforeAll, describe, expect, it } from "vitest";

import { prefix } from "./helpers.js";

beforeAll(async () => {
  // The children read these (the factory module cannot receive arguments across processes).
  process.env["RESUMABLE_CRASH_REDIS_URL"] = (await getRedis()).url;
  process.env["RESUMABLE_CRASH_REDIS_PREFIX"] = prefix("retention-crash");
});

describe("SIGKILL during prune and copyThread on Redis", () => {
  it("leaves every kept checkpoint readable and as before at every command, and a second run completes the job", async () => {
    const report = await runRetentionCrashSweep({ factoryModule: fileURLToPath(new URL("./fixtures/crash-factory.ts", import.meta.url)) });
    console.info(
      `retention crash sweep: ${report.points.length} kill points (prune ${report.commands.prune}, copy ${report.commands.copy} commands), ` +
        `${report.processes} processes, ${(report.durationMs / 1000).toFixed(1)} s`,
    );
    expect(report.failed).toEqual([]);
    expect(report.commands.prune).toBeGreaterThanOrEqual(2);
    expect(report.points).toHaveLength((report.commands.prune ?? 0) + (report.commands.copy ?? 0));
  }, 300_000);
});
