/**
 * Renders a {@link ConformanceReport} as text: one line per category with its status, each failed
 * check with its error, each skip with its reason.
 *
 * @module
 */
import type { CategoryResult, ConformanceReport, ReportSection, Status } from "./types.js";

const LABEL: Record<Status, string> = { passed: "PASS", failed: "FAIL", skipped: "SKIP" };

function formatCapabilities(report: ConformanceReport): string {
  const caps = report.subject.capabilities;
  return Object.entries(caps)
    .map(([k, v]) => `${k}=${typeof v === "number" && !Number.isFinite(v) ? "unlimited" : String(v)}`)
    .join(", ");
}

function formatCategory(category: CategoryResult, width: number): string[] {
  const counted = category.checks.filter((c) => c.status !== "skipped");
  const passed = counted.filter((c) => c.status === "passed").length;
  const tally = category.summary
    ? ` (${category.summary})`
    : category.checks.length > 0 && category.status !== "skipped"
      ? ` (${passed}/${counted.length})`
      : "";
  const lines = [`  ${LABEL[category.status]}  ${category.id.padEnd(width)}  ${category.title}${tally}`];
  if (category.status === "skipped" && category.reason) lines.push(`        skipped: ${category.reason}`);
  for (const check of category.checks) {
    if (check.status === "failed") {
      lines.push(`        ✗ ${check.name}`);
      for (const line of (check.error ?? "").split("\n").slice(0, 8)) lines.push(`            ${line}`);
    } else if (check.status === "skipped" && category.status !== "skipped") {
      lines.push(`        - skipped: ${check.name}: ${check.reason}`);
    }
  }
  return lines;
}

function formatSection(section: ReportSection): string[] {
  const head = `${section.title}: ${section.status.toUpperCase()}${section.summary ? ` (${section.summary})` : ""}`;
  const lines = [head];
  if (section.status === "skipped" && section.reason) lines.push(`  skipped: ${section.reason}`);
  const width = Math.max(0, ...section.categories.map((c) => c.id.length));
  for (const category of section.categories) lines.push(...formatCategory(category, width));
  return lines;
}

/** The report as text, as the CLI prints it. */
export function formatReport(report: ConformanceReport): string {
  const lines = [
    `Resumable conformance report: ${report.subject.name} (${report.subject.kind === "store" ? "CheckpointStore" : "BaseCheckpointSaver"})`,
    `Capabilities: ${formatCapabilities(report)}`,
    "",
  ];
  for (const section of report.sections) lines.push(...formatSection(section), "");
  lines.push(`Result: ${report.status.toUpperCase()} in ${(report.durationMs / 1000).toFixed(1)} s`);
  return lines.join("\n");
}
