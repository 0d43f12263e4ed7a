/**
 * Runs checks without a test framework: the CLI uses this, and so can any script. Each check gets a
 * fresh subject from the factory, closed and torn down afterwards, whatever happened.
 *
 * @module
 */
import { CATEGORIES } from "./categories/index.js";
import { SubjectPool, createContext, probeSubject, toTarget } from "./subject.js";
import type {
  Category,
  CategoryResult,
  Check,
  CheckResult,
  ConformanceFactory,
  ConformanceReport,
  ConformanceTarget,
  ReportSection,
  Status,
  SubjectInfo,
} from "./types.js";

/** Options of {@link runChecks}. */
export interface RunChecksOptions {
  /** Categories to run (objects or ids). Default: all of {@link CATEGORIES}. */
  categories?: ReadonlyArray<Category | string>;
  /** Called after each check, e.g. to print progress. */
  onCheck?(category: Category, result: CheckResult): void;
  /** A check still running after this many ms fails, so that a hung store cannot hang the run. Default 300 000. */
  timeoutMs?: number;
}

/** Picks categories by object or id; an unknown id is an error that lists the known ones. */
export function selectCategories(selection: ReadonlyArray<Category | string> | undefined): Category[] {
  if (!selection) return [...CATEGORIES];
  return selection.map((c) => {
    if (typeof c !== "string") return c;
    const found = CATEGORIES.find((k) => k.id === c);
    if (!found) throw new Error(`Unknown conformance category "${c}". Known: ${CATEGORIES.map((k) => k.id).join(", ")}.`);
    return found;
  });
}

/**
 * Runs one check on a fresh subject, closing every subject it opened afterwards; throws what the
 * check threw. The vitest wrapper uses this, so failures keep their stack.
 */
export async function executeCheck(target: ConformanceTarget, info: SubjectInfo, check: Check): Promise<void> {
  const pool = new SubjectPool(target);
  let failure: { error: unknown } | undefined;
  try {
    await check.run(createContext(info, pool));
  } catch (error) {
    failure = { error };
  }
  try {
    await pool.closeAll();
  } catch (error) {
    failure ??= { error };
  }
  if (failure) throw failure.error;
}

/** Runs one check on a fresh subject and says how it went; never throws. */
export async function runCheck(target: ConformanceTarget, info: SubjectInfo, check: Check, timeoutMs = 300_000): Promise<CheckResult> {
  const started = performance.now();
  const reason = check.skipUnless?.(info);
  if (reason !== undefined) return { name: check.name, status: "skipped", reason, durationMs: 0 };
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the check did not finish within ${timeoutMs / 1000} s (a call to the store never settled?)`)), timeoutMs);
      timer.unref();
    });
    await Promise.race([executeCheck(target, info, check), timeout]);
    return { name: check.name, status: "passed", durationMs: Math.round(performance.now() - started) };
  } catch (error) {
    return { name: check.name, status: "failed", error: describeError(error), durationMs: Math.round(performance.now() - started) };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the checks of one category, one after the other. */
export async function runCategory(
  target: ConformanceTarget,
  info: SubjectInfo,
  category: Category,
  options: Pick<RunChecksOptions, "onCheck" | "timeoutMs"> = {},
): Promise<CategoryResult> {
  const checks: CheckResult[] = [];
  for (const check of category.checks) {
    const result = await runCheck(target, info, check, options.timeoutMs);
    checks.push(result);
    options.onCheck?.(category, result);
  }
  const status = combine(checks.map((c) => c.status));
  const reasons = [...new Set(checks.map((c) => c.reason).filter((r): r is string => r !== undefined))];
  return { id: category.id, title: category.title, status, reason: status === "skipped" ? reasons.join("; ") : undefined, checks };
}

/** Runs the contract categories and returns the `"contract"` section of a report. */
export async function runContractSection(
  target: ConformanceTarget,
  info: SubjectInfo,
  options: RunChecksOptions = {},
): Promise<ReportSection> {
  const categories: CategoryResult[] = [];
  for (const category of selectCategories(options.categories)) categories.push(await runCategory(target, info, category, options));
  const count = (s: Status) => categories.filter((c) => c.status === s).length;
  return {
    id: "contract",
    title: "Contract categories",
    status: combine(categories.map((c) => c.status)),
    summary: `${count("passed")} passed, ${count("failed")} failed, ${count("skipped")} skipped`,
    categories,
  };
}

/**
 * Runs the contract categories against a factory and returns a report, without vitest (LangChain's
 * validation suite needs vitest; the CLI adds it as its own section).
 *
 * @example
 * ```ts
 * const report = await runChecks(() => new MemoryStore());
 * console.log(formatReport(report));
 * ```
 */
export async function runChecks(target: ConformanceTarget | ConformanceFactory, options: RunChecksOptions = {}): Promise<ConformanceReport> {
  const normalized = toTarget(target);
  const started = performance.now();
  const startedAt = new Date().toISOString();
  const info = await probeSubject(normalized);
  const section = await runContractSection(normalized, info, options);
  return buildReport(info, [section], startedAt, started);
}

/** Assembles a report from sections; it failed when any section failed. */
export function buildReport(info: SubjectInfo, sections: ReportSection[], startedAt: string, startedPerf: number): ConformanceReport {
  return {
    subject: info,
    status: sections.some((s) => s.status === "failed") ? "failed" : "passed",
    startedAt,
    durationMs: Math.round(performance.now() - startedPerf),
    sections,
  };
}

/** Failed if any failed; skipped if all skipped (or none); otherwise passed. */
export function combine(statuses: Status[]): Status {
  if (statuses.includes("failed")) return "failed";
  if (statuses.length === 0 || statuses.every((s) => s === "skipped")) return "skipped";
  return "passed";
}

function describeError(error: unknown): string {
  if (error instanceof Error) {
    const name = error.name && error.name !== "Error" && error.name !== "ConformanceFailure" ? `${error.name}: ` : "";
    return `${name}${error.message}`;
  }
  return String(error);
}
