/**
 * The retention crash sweep: `prune` and `copyThread` killed with SIGKILL after every database command,
 * on one thread of modest size (a plain message list stored as delta chains with shared pieces, and a
 * `DeltaChannel` between snapshots), each kill point in a child process of its own.
 *
 * After each kill, a fresh process checks that every checkpoint left reads exactly as the template's
 * (`getTuple`/`list` views and the graph state, DeltaChannel values included), that a killed prune
 * left every checkpoint an uncrashed prune keeps, then runs the operation again and checks that it
 * completes the job: the same checkpoints as an uncrashed run, and no record that no checkpoint reads.
 *
 * @example
 * ```ts
 * const report = await runRetentionCrashSweep({ factoryModule: "./my-store.ts" });
 * expect(report.failed).toEqual([]);
 * ```
 *
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { bundleChild, siblingModule } from "./bundle.js";
import { ChildPool, type JobOutcome } from "./pool.js";
import type { RetentionJob, RetentionJobResult, RetentionOperation } from "./retention-child.js";

/** Options of {@link runRetentionCrashSweep}. */
export interface RetentionCrashOptions {
  /** Path of the module whose default export returns the store (as for the crash suite). */
  factoryModule: string;
  /** Which operations to sweep. Default both. */
  operations?: RetentionOperation[];
  /** Chat turns in the template thread (three checkpoints each). Default 2. */
  turns?: number;
  /** The prune's `keepLast`. Default 1. */
  keepLast?: number;
  /** Kill points run at once. Default 2. */
  concurrency?: number;
  /** Where the children keep their files; a temporary directory by default (removed afterwards). */
  workDir?: string;
  /** Milliseconds a job may take before its process is killed. Default 60000. */
  jobTimeoutMs?: number;
}

/** One kill point. */
export interface RetentionKillPoint {
  operation: RetentionOperation;
  /** Killed after this many commands. */
  k: number;
  /** The command it was killed after, from the uncrashed run. */
  command: string;
  status: "passed" | "failed";
  /** What was wrong, when it failed. */
  problems: string[];
}

/** What {@link runRetentionCrashSweep} found. */
export interface RetentionCrashReport {
  /** Commands of an uncrashed run of each operation. */
  commands: Partial<Record<RetentionOperation, number>>;
  points: RetentionKillPoint[];
  /** The kill points that failed, as `operation after k (command): problem` lines. */
  failed: string[];
  /** Child processes started. */
  processes: number;
  durationMs: number;
}

/**
 * Runs the sweep for one store factory module; every kill point of every operation, two at a time.
 */
export async function runRetentionCrashSweep(options: RetentionCrashOptions): Promise<RetentionCrashReport> {
  const started = Date.now();
  const operations = options.operations ?? ["prune", "copy"];
  const turns = options.turns ?? 2;
  const keepLast = options.keepLast ?? 1;
  const timeout = options.jobTimeoutMs ?? 60_000;
  const ownRoot = options.workDir === undefined;
  const root = options.workDir ?? mkdtempSync(join(tmpdir(), "resumable-retention-crash-"));
  const workDir = join(root, "data");
  mkdirSync(workDir, { recursive: true });
  const bundle = await bundleChild(options.factoryModule, join(root, "bundle"), {
    module: siblingModule(import.meta.url, "retention-child"),
    exportName: "retentionChildMain",
  });
  const env = { ...process.env };
  delete env["RESUMABLE_CRASH_PROBE_DIR"];
  const pool = new ChildPool(bundle.args, env, Math.max(1, options.concurrency ?? 2));
  const report: RetentionCrashReport = { commands: {}, points: [], failed: [], processes: 0, durationMs: 0 };
  // Thread ids of their own per run, so that a server-based store shared between runs is no problem.
  const run = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
  const template = `retention-${run}`;
  let nextId = 1;
  const job = (fields: Omit<RetentionJob, "type" | "id" | "workDir" | "template" | "turns" | "keepLast">): RetentionJob => ({
    type: "job",
    id: nextId++,
    workDir,
    template,
    turns,
    keepLast,
    ...fields,
  });
  const runOn = async (request: RetentionJob): Promise<JobOutcome<RetentionJobResult>> => {
    const child = await pool.acquire();
    const outcome = await child.run<RetentionJob, RetentionJobResult>(request, timeout);
    pool.release(child);
    return outcome;
  };
  const resultOf = (outcome: JobOutcome<RetentionJobResult>, what: string): RetentionJobResult => {
    if (outcome.kind !== "result") throw new Error(`${what}: the process died (${outcome.signal ?? outcome.code}): ${outcome.stderr.trim()}`);
    if (outcome.result.error) throw new Error(`${what}: ${outcome.result.error}`);
    return outcome.result;
  };

  try {
    const prepared = resultOf(await runOn(job({ phase: "prepare", operation: "prune", target: template })), "preparing the template thread");
    const names = prepared.names!;
    const points: Array<{ operation: RetentionOperation; k: number }> = [];
    for (const operation of operations) {
      report.commands[operation] = names[operation].length;
      for (let k = 1; k <= names[operation].length; k += 1) points.push({ operation, k });
    }
    let next = 0;
    const worker = async () => {
      while (next < points.length) {
        const { operation, k } = points[next++]!;
        const target = `${template}-${operation}-${k}`;
        const command = names[operation][k - 1] ?? "?";
        const point: RetentionKillPoint = { operation, k, command, status: "passed", problems: [] };
        try {
          const crashed = await runOn(job({ phase: "crash", operation, target, k }));
          if (crashed.kind === "result") {
            point.problems.push(crashed.result.error ?? `the process was not killed (the operation took ${crashed.result.commands} commands)`);
          } else if (crashed.signal !== "SIGKILL") {
            point.problems.push(`the process died with ${crashed.signal ?? `exit code ${crashed.code}`} instead of the kill: ${crashed.stderr.trim()}`);
          } else {
            point.problems.push(...(resultOf(await runOn(job({ phase: "verify", operation, target })), "checking").problems ?? []));
          }
        } catch (error) {
          point.problems.push(error instanceof Error ? error.message : String(error));
        }
        if (point.problems.length > 0) {
          point.status = "failed";
          for (const problem of point.problems) report.failed.push(`${operation} killed after command ${k} (${command}): ${problem}`);
        }
        report.points.push(point);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 2) }, worker));
    report.points.sort((a, b) => (a.operation === b.operation ? a.k - b.k : a.operation < b.operation ? -1 : 1));
  } finally {
    pool.close();
    report.processes = pool.started;
    report.durationMs = Date.now() - started;
    if (ownRoot) rmSync(root, { recursive: true, force: true });
  }
  return report;
}
