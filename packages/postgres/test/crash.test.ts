// Crash injection on PostgreSQL: child processes killed (SIGKILL) after every query of a run, in
// every graph and durability mode, then resumed from a new process. CI runs every kill point; a local
// run samples them unless RESUMABLE_CRASH_FULL=1.
import { fileURLToPath } from "node:url";

import { formatCrashReport, runCrashSuite } from "@resumable/conformance";
import { createTestDatabase, type TestDatabase } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const full = process.env["CI"] === "true" || process.env["RESUMABLE_CRASH_FULL"] === "1";
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
  // The children read these (the factory module cannot receive arguments across processes).
  process.env["RESUMABLE_CRASH_POSTGRES_URL"] = db.url;
  process.env["RESUMABLE_CRASH_POSTGRES_SCHEMA"] = "crash";
});
afterAll(async () => {
  await db?.drop();
});

describe("crash injection on PostgreSQL", () => {
  it(
    `survives ${full ? "a kill after every query" : "sampled kills"} in every graph and durability mode`,
    async () => {
      const report = await runCrashSuite({
        factoryModule: fileURLToPath(new URL("./fixtures/crash-factory.ts", import.meta.url)),
        storeName: "PostgresStore",
        quick: !full,
      });
      console.info(formatCrashReport(report));
      expect(report.applicable).toBe(true);
      expect(report.counting).toBe("database commands");
      expect(report.cells.filter((c) => c.status === "fail").flatMap((c) => c.messages)).toEqual([]);
      expect(report.rows).toHaveLength(18);
      expect(new Set(report.rows.map((r) => r.mode))).toEqual(new Set(["exit", "async", "sync"]));
    },
    30 * 60_000,
  );
});
