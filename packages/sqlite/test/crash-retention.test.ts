// SIGKILL after every statement of a prune and of a copyThread on a SQLite file: every checkpoint
// left reads as before, a killed prune keeps what an uncrashed one keeps, and running it again
// completes the job with no orphan (see runRetentionCrashSweep in @resumable/conformance).
import { fileURLToPath } from "node:url";

import { runRetentionCrashSweep } from "@resumable/conformance";
import { describe, expect, it } from "vitest";

describe("SIGKILL during prune and copyThread on SQLite", () => {
  it("leaves every kept checkpoint readable and as before at every statement, and a second run completes the job", async () => {
    const report = await runRetentionCrashSweep({ factoryModule: fileURLToPath(new URL("./fixtures/conformance-factory.ts", import.meta.url)) });
    console.info(
      `retention crash sweep: ${report.points.length} kill points (prune ${report.commands.prune}, copy ${report.commands.copy} statements), ` +
        `${report.processes} processes, ${(report.durationMs / 1000).toFixed(1)} s`,
    );
    expect(report.failed).toEqual([]);
    expect(report.commands.prune).toBeGreaterThan(4);
    expect(report.points).toHaveLength((report.commands.prune ?? 0) + (report.commands.copy ?? 0));
  }, 300_000);
});
