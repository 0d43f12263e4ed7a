/**
 * Crash injection on one FerretDB handler: child processes killed (SIGKILL) after every database
 * command of a run, in every graph and durability mode, then resumed from a new process. CI runs every
 * kill point (on one handler, see `sampledInCi`); a local run samples them unless RESUMABLE_CRASH_FULL=1.
 */
import { fileURLToPath } from "node:url";

import { formatCrashReport, runCrashSuite } from "@resumable/conformance";
import { getMongoDb, type FerretDbHandler } from "@resumable/test-servers";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * `sampledInCi`: CI samples the kill points on this handler too (the full sweep runs on the other one:
 * the store sends the same commands to both).
 */
export function mongoCrashSuite(handler: FerretDbHandler, options: { sampledInCi?: boolean } = {}): void {
  const full = process.env["RESUMABLE_CRASH_FULL"] === "1" || (process.env["CI"] === "true" && !options.sampledInCi);
  // Every job's database starts with this, so the test can drop them all afterwards.
  const prefix = `resumable_crash_${handler.slice(0, 2)}_${process.pid}_`;
  let url: string;
  beforeAll(async () => {
    url = (await getMongoDb(handler)).url;
    // The children read these (the factory module cannot receive arguments across processes).
    process.env["RESUMABLE_CRASH_MONGODB_URL"] = url;
    process.env["RESUMABLE_CRASH_MONGODB_PREFIX"] = prefix;
  });
  afterAll(async () => {
    const client = await MongoClient.connect(url);
    try {
      const { databases } = await client.db().admin().listDatabases({ nameOnly: true });
      for (const { name } of databases) if (name.startsWith(prefix)) await client.db(name).dropDatabase();
    } finally {
      await client.close();
    }
  });

  describe(`crash injection on FerretDB (${handler} handler)`, () => {
    it(
      `survives ${full ? "a kill after every command" : "sampled kills"} in every graph and durability mode`,
      async () => {
        const report = await runCrashSuite({
          factoryModule: fileURLToPath(new URL("./fixtures/crash-factory.ts", import.meta.url)),
          storeName: `MongoDBStore (FerretDB ${handler})`,
          quick: !full,
          concurrency: Number(process.env["RESUMABLE_CRASH_CONCURRENCY"] ?? 2),
        });
        console.info(formatCrashReport(report));
        console.info(`crash sweep on ${handler}: ${report.cells.length} kill points, ${report.processes} processes, ${(report.durationMs / 1000).toFixed(0)} s`);
        expect(report.applicable).toBe(true);
        expect(report.counting).toBe("database commands");
        expect(report.cells.filter((c) => c.status === "fail").flatMap((c) => c.messages)).toEqual([]);
        expect(report.rows).toHaveLength(18);
        expect(new Set(report.rows.map((r) => r.mode))).toEqual(new Set(["exit", "async", "sync"]));
      },
      30 * 60_000,
    );
  });
}
