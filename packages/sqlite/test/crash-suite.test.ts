// The crash-injection suite (@resumable/conformance) on SQLite files: SQLite itself at every kill
// point, and deliberately broken stores built on it that the suite must catch. They live here, with
// the database, so that the suite depends on no backend.
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { formatCrashReport, runCrashSuite, writeCrashReport, type CrashReport } from "@resumable/conformance";

const here = dirname(fileURLToPath(import.meta.url));
const fixture = (name: string) => join(here, "fixtures/crash-suite", `${name}.ts`);
const reportDir = join(here, "..", ".tmp");

/** CI runs every kill point; a local run samples them unless RESUMABLE_CRASH_FULL=1. */
const full = process.env["CI"] === "true" || process.env["RESUMABLE_CRASH_FULL"] === "1";

function failures(report: CrashReport): string[] {
  return report.cells.filter((c) => c.status === "fail").flatMap((c) => c.messages);
}

describe("crash injection on SQLite, and the suite catching broken stores built on it", () => {
  it(
    `SQLite on a file database survives ${full ? "a kill after every command" : "sampled kills"} in every graph and mode`,
    async () => {
      const report = await runCrashSuite({ factoryModule: fixture("sqlite-store"), quick: !full });
      mkdirSync(reportDir, { recursive: true });
      await writeCrashReport(report, join(reportDir, "crash-report-sqlite.json"));
      console.log(formatCrashReport(report));
      expect(report.applicable).toBe(true);
      expect(report.counting).toBe("database commands");
      expect(failures(report)).toEqual([]);
      // Six graphs, three modes, and every row killed at least once per command sampled.
      expect(report.rows).toHaveLength(18);
      for (const row of report.rows) expect(row.killPoints).toBeGreaterThan(row.graph === "interrupt" ? 2 : 1);
      // Kills inside the charging node happened after the charge, and the charge still happened once.
      const inNode = report.cells.filter((c) => c.kill.startsWith("in node"));
      expect(inNode.length).toBe(18);
      for (const cell of inNode.filter((c) => c.graph !== "send")) expect(cell).toMatchObject({ attempts: 2, effects: 1 });
    },
    20 * 60_000,
  );

  it("fails a store that commits a checkpoint before its blobs, naming graph, mode and k", async () => {
    const report = await runCrashSuite({ factoryModule: fixture("torn-sqlite-store"), graphs: ["linear"], modes: ["sync"] });
    const messages = failures(report);
    expect(messages.length).toBeGreaterThan(0);
    // Reading refuses the torn checkpoint (its record names the blobs its put stored), so the suite
    // reports it from the first read that meets it.
    expect(messages.some((m) => /^linear \/ sync \/ k=\d+ \(after COMMIT\): .*checkpoint \S+ of thread .* is torn: its put stored channel "[^"]+" at version \S+, and that blob is missing/.test(m))).toBe(true);
  }, 180_000);

  it("fails a store whose putWrites resolves without writing, naming the lost write", async () => {
    const report = await runCrashSuite({ factoryModule: fixture("lossy-sqlite-store"), graphs: ["fanout"], modes: ["sync"], quick: 4 });
    expect(failures(report).some((m) => /^fanout \/ sync \/ .*: write "middle_out" of task \S+ on checkpoint \S+ was lost: putWrites had resolved/.test(m))).toBe(true);
  });

  it("fails a store that forgets what it had acknowledged (a new database in every process)", async () => {
    const report = await runCrashSuite({ factoryModule: fixture("forgetful-sqlite-store"), graphs: ["linear"], modes: ["sync"], quick: 3 });
    expect(failures(report).some((m) => /^linear \/ sync \/ k=\d+ .*: checkpoint \S+ \(namespace ""\) was lost: its put had resolved/.test(m))).toBe(true);
  });

  it("fails a saver that lets a checkpoint land before the writes of the step before it (LangGraph Python #8039)", async () => {
    const broken = await runCrashSuite({ factoryModule: fixture("unordered-saver"), graphs: ["linear"], modes: ["sync"] });
    expect(failures(broken).some((m) => /^linear \/ sync \/ k=\d+ .*became durable before the writes of task .*#8039/.test(m))).toBe(true);

    // The same slow writes under core's saver, which orders a checkpoint after the writes before it.
    const ordered = await runCrashSuite({ factoryModule: fixture("slow-writes-sqlite-store"), graphs: ["linear"], modes: ["sync"] });
    expect(failures(ordered)).toEqual([]);
    expect(ordered.passed).toBeGreaterThan(10);
  }, 180_000);
});
