/**
 * The retention crash sweep on one FerretDB handler: SIGKILL after every command of a prune and of a
 * copyThread; every checkpoint left reads as before, a killed prune keeps what an uncrashed one keeps,
 * and running it again completes the job with no orphan (see runRetentionCrashSweep in
 * @resumable/conformance). Every job shares one database (the sweep gives them one work directory).
 */
import { fileURLToPath } from "node:url";

import { runRetentionCrashSweep } from "@resumable/conformance";
import { getMongoDb, type FerretDbHandler } from "@resumable/test-servers";
import { MongoClient } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The prune's kill points always; copyThread's (core's generic copy, about 50 puts and writes, and its
 * puts swept by crash-*.test.ts here) in CI on one handler only (`copyInCi`: 105-147 s on FerretDB),
 * and with RESUMABLE_CRASH_FULL=1 on both.
 */
export function mongoRetentionCrashSweep(handler: FerretDbHandler, options: { copyInCi?: boolean } = {}): void {
  const full = process.env["RESUMABLE_CRASH_FULL"] === "1" || (process.env["CI"] === "true" && options.copyInCi === true);
  const prefix = `resumable_rcrash_${handler.slice(0, 2)}_${process.pid}_`;
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

  describe(`SIGKILL during prune and copyThread on FerretDB (${handler} handler)`, () => {
    it("leaves every kept checkpoint readable and as before at every command, and a second run completes the job", async () => {
      const report = await runRetentionCrashSweep({
        factoryModule: fileURLToPath(new URL("./fixtures/crash-factory.ts", import.meta.url)),
        operations: full ? ["prune", "copy"] : ["prune"],
      });
      console.info(
        `retention crash sweep on ${handler}: ${report.points.length} kill points (prune ${report.commands.prune} commands: ` +
          `${report.points.filter((p) => p.operation === "prune").map((p) => p.command).join(", ")}` +
          `${full ? `; copy ${report.commands.copy} commands` : ""}), ${report.processes} processes, ${(report.durationMs / 1000).toFixed(1)} s`,
      );
      expect(report.failed).toEqual([]);
      // The listing (four queries), then the removals in their order (no chunk is left to remove here).
      expect(report.commands.prune).toBeGreaterThanOrEqual(7);
      expect(report.points).toHaveLength((report.commands.prune ?? 0) + (report.commands.copy ?? 0));
    }, 300_000);
  });
}
