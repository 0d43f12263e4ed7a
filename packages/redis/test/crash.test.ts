// Crash injection on Redis: child processes killed (SIGKILL) after every Redis command of a run, in
// every graph and durability mode, then resumed from a new process. CI runs every kill point; a
// local run samples them unless RESUMABLE_CRASH_FULL=1.
import { fileURLToPath } from "node:url";

import { formatCrashReport, runCrashSuite } from "@resumable/conformance";
import { getRedis } from "@resumable/test-servers";
import { beforeAll, describe, expect, it } from "vitest";

import { prefix } from "./helpers.js";

const full = process.env["CI"] === "true" || process.env["RESUMABLE_CRASH_FULL"] === "1";

beforeAll(async () => {
  // The children read these (the factory module cannot receive arguments across processes).
  process.env["RESUMABLE_CRASH_REDIS_URL"] = (await getRedis()).url;
  process.env["RESUMABLE_CRASH_REDIS_PREFIX"] = prefix("crash");
});

describe("crash injection on Redis", () => {
  it(
    `survives ${full ? "a kill after every command" : "sampled kills"} in every graph and durability mode`,
    async () => {
      const started = Date.now();
      const report = await runCrashSuite({
        factoryModule: fileURLToPath(new URL("./fixtures/crash-factory.ts", import.meta.url)),
        storeName: "RedisStore",
        quick: !full,
      });
      console.info(formatCrashReport(report));
      console.info(`crash sweep: ${report.cells.length} kill points, ${report.processes} processes, ${((Date.now() - started) / 1000).toFixed(1)} s`);
      expect(report.applicable).toBe(true);
      expect(report.counting).toBe("database commands");
      expect(report.cells.filter((c) => c.status === "fail").flatMap((c) => c.messages)).toEqual([]);
      expect(report.rows).toHaveLength(18);
      expect(new Set(report.rows.map((r) => r.mode))).toEqual(new Set(["exit", "async", "sync"]));
    },
    30 * 60_000,
  );
});
