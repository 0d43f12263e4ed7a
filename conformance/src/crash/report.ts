/**
 * The crash matrix as text (for a terminal) and as JSON (for CI and the conformance report).
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import type { CrashReport } from "./harness.js";

function pad(text: string | number, width: number): string {
  return String(text).padEnd(width);
}

/**
 * The matrix as text: one line per graph and mode (commands of the uncrashed run, kill points,
 * passed, failed), then every failure with its graph, mode and kill point.
 */
export function formatCrashReport(report: CrashReport): string {
  const lines: string[] = [];
  const seconds = (report.durationMs / 1000).toFixed(1);
  if (!report.applicable) {
    lines.push(`Crash injection, ${report.store}: not applicable. ${report.reason ?? ""}`.trim());
    return lines.join("\n");
  }
  lines.push(
    `Crash injection, ${report.store} (kills counted in ${report.counting ?? "commands"}), ` +
      `${report.quick ? "sampled kill points (--quick)" : "every kill point"}: ` +
      `${report.cells.length} kills, ${report.passed} passed, ${report.failed} failed, ${seconds} s, ${report.processes} processes`,
  );
  lines.push("");
  lines.push(`${pad("graph", 10)}${pad("mode", 7)}${pad("commands", 10)}${pad("kills", 7)}${pad("passed", 8)}failed`);
  for (const row of report.rows) {
    lines.push(`${pad(row.graph, 10)}${pad(row.mode, 7)}${pad(row.commands, 10)}${pad(row.killPoints, 7)}${pad(row.passed, 8)}${row.failed}`);
  }
  const failures = report.cells.filter((c) => c.status === "fail");
  if (failures.length > 0) {
    lines.push("");
    lines.push("Failures:");
    for (const cell of failures) for (const message of cell.messages) lines.push(`  ✗ ${message}`);
  }
  return lines.join("\n");
}

/** Writes the report as JSON (every cell: store × graph × mode × kill point → pass/fail). */
export async function writeCrashReport(report: CrashReport, path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${JSON.stringify(report, null, 2)}\n`);
}
