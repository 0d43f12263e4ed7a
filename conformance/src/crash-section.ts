/**
 * The crash-injection suite as a section of the conformance report: one category per graph shape,
 * one check per durability mode, each failure naming graph, mode and kill point.
 *
 * @module
 */
import { formatCrashReport, runCrashSuite, writeCrashReport, type CrashReport } from "./crash/index.js";
import type { SectionRunner } from "./sections.js";
import type { CategoryResult, CheckResult, ReportSection } from "./types.js";

/** Options of {@link crashSection}. */
export interface CrashSectionOptions {
  /** Sample kill points instead of killing after every command (see `runCrashSuite`). */
  quick?: boolean | number;
  /** Also write the whole matrix (store × graph × mode × kill point) as JSON here. */
  jsonPath?: string;
  /** Where progress and the matrix are printed; default stderr. */
  log?: (line: string) => void;
}

/** Shows at most this many failure messages per check; the JSON matrix has all of them. */
const MAX_MESSAGES = 6;

/** Turns a crash report into a report section. */
export function crashReportSection(report: CrashReport): ReportSection {
  const title = "Crash injection (SIGKILL at every database command, then resume in a new process)";
  if (!report.applicable) {
    return { id: "crash", title, status: "skipped", summary: "not applicable", reason: `not applicable: ${report.reason ?? "the store cannot outlive its process"}`, categories: [] };
  }
  const categories: CategoryResult[] = [];
  for (const graph of [...new Set(report.rows.map((r) => r.graph))]) {
    const checks: CheckResult[] = report.rows
      .filter((row) => row.graph === graph)
      .map((row) => {
        const failed = report.cells.filter((c) => c.graph === graph && c.mode === row.mode && c.status === "fail");
        const messages = failed.flatMap((c) => c.messages);
        const name = `${row.mode}: ${row.killPoints} kill points over ${row.commands} commands`;
        return messages.length === 0 && row.failed === 0
          ? { name, status: "passed" as const, durationMs: 0 }
          : {
              name,
              status: "failed" as const,
              error: [...messages.slice(0, MAX_MESSAGES), ...(messages.length > MAX_MESSAGES ? [`… and ${messages.length - MAX_MESSAGES} more`] : [])].join("\n"),
              durationMs: 0,
            };
      });
    categories.push({
      id: `crash:${graph}`,
      title: `graph "${graph}" in every durability mode`,
      status: checks.some((c) => c.status === "failed") ? "failed" : "passed",
      checks,
    });
  }
  return {
    id: "crash",
    title,
    status: report.failed > 0 ? "failed" : "passed",
    summary: `${report.passed} kill points passed, ${report.failed} failed, ${report.quick ? "sampled" : "every command"}, ${(report.durationMs / 1000).toFixed(0)} s`,
    categories,
  };
}

/** The crash-injection section for the CLI: runs the sweep on the module the CLI was given. */
export function crashSection(options: CrashSectionOptions = {}): SectionRunner {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  return {
    id: "crash",
    async run({ modulePath, info }) {
      log(`  … crash injection${options.quick ? " (sampled kill points)" : " (a kill after every command)"}`);
      let done = 0;
      const report = await runCrashSuite({
        factoryModule: modulePath,
        storeName: info.name,
        quick: options.quick ?? false,
        onCell: (cell) => {
          done += 1;
          if (cell.status === "fail") log(`    ✗ ${cell.messages[0] ?? `${cell.graph} / ${cell.mode} / ${cell.kill}`}`);
          else if (done % 50 === 0) log(`    ${done} kill points checked`);
        },
      });
      log(formatCrashReport(report));
      if (options.jsonPath) await writeCrashReport(report, options.jsonPath);
      return crashReportSection(report);
    },
  };
}
