/**
 * The crash-injection sweep: for every graph shape and durability mode, an uncrashed run counts the
 * database commands N; then for every k in 1..N a child process runs the graph and kills itself with
 * SIGKILL right after command k, a fresh process resumes, and the checker compares what it finds with
 * the uncrashed run. Kills inside a node and while waiting on an interrupt are added.
 *
 * @module
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { bundleChild } from "./bundle.js";
import { CRASH_GRAPHS, crashGraph } from "./graphs.js";
import { ChildPool, type JobOutcome } from "./pool.js";
import {
  SIDE_FILES,
  type AttemptEntry,
  type CommandCounting,
  type Durability,
  type ExecEntry,
  type JobRequest,
  type JobResult,
  type KillPoint,
  type WriteLogEntry,
} from "./protocol.js";

/** Every durability mode, in the order the matrix lists them. */
export const DURABILITY_MODES: readonly Durability[] = ["exit", "async", "sync"];

/** Options of {@link runCrashSuite}. */
export interface CrashSuiteOptions {
  /**
   * Path of a module whose default export returns the store or saver under test:
   * `(context: { workDir: string }) => CheckpointStore | BaseCheckpointSaver | Promise<...>`. It is
   * loaded in child processes (TypeScript is fine: it is bundled with esbuild first), called once per
   * job, and must connect to the same database every time it is called with the same `workDir`
   * (a file-based store keeps its file inside `workDir`; a server-based one may ignore it, threads are
   * unique per job).
   */
  factoryModule: string;
  /** A name for the store in the report; default: the class name the factory returned. */
  storeName?: string;
  /** Graph shapes to run (names from {@link CRASH_GRAPHS}); default all. */
  graphs?: string[];
  /** Durability modes; default all three. */
  modes?: Durability[];
  /**
   * Sample the kill points instead of killing after every command: `true` takes 6 per graph and
   * mode (the first, the last and evenly spaced ones), a number takes that many. Default `false`.
   */
  quick?: boolean | number;
  /** Jobs running at once (each a process). Default 2. */
  concurrency?: number;
  /** Where work directories go; default a new temporary directory, removed afterwards. */
  workDir?: string;
  /** Keep the work directory (the side logs and database files) for inspection. Default `false`. */
  keepWorkDir?: boolean;
  /** A job (one run in one process) taking longer than this is killed and fails. Default 60 s. */
  jobTimeoutMs?: number;
  /** Called after each kill point is checked. */
  onCell?: (cell: CrashCell) => void;
}

/** Result of one kill point. */
export interface CrashCell {
  store: string;
  graph: string;
  mode: Durability;
  /** `k=12`, `in node charge`, `at interrupt`. */
  kill: string;
  /** For command kills: k, and the command it was killed after. */
  k?: number;
  command?: string;
  status: "pass" | "fail" | "not applicable";
  /** Why it failed (each names graph, mode and kill point), or notes on a pass. */
  messages: string[];
  /** What the resuming process did. */
  actions?: string[];
  /** Checkpoints of the thread that were on disk after the kill. */
  checkpointsAtKill?: number;
  /** How often the guarded side effect was attempted (what it would have happened without the key). */
  attempts?: number;
  /** How often it actually happened. */
  effects?: number;
}

/** One row of the matrix: a graph in one mode. */
export interface CrashRow {
  graph: string;
  mode: Durability;
  /** Commands of the uncrashed run. */
  commands: number;
  killPoints: number;
  passed: number;
  failed: number;
}

/** The whole sweep for one store. */
export interface CrashReport {
  store: string;
  /** `false` when the store cannot outlive its process: every cell is "not applicable". */
  applicable: boolean;
  reason?: string;
  counting?: CommandCounting;
  quick: boolean;
  rows: CrashRow[];
  cells: CrashCell[];
  passed: number;
  failed: number;
  durationMs: number;
  /** Child processes started. */
  processes: number;
}

interface Baseline {
  result: JobResult;
  effects: number;
  execs: ExecEntry[];
}

/** Runs the crash sweep for one store and returns the matrix. */
export async function runCrashSuite(options: CrashSuiteOptions): Promise<CrashReport> {
  const started = Date.now();
  const graphs = (options.graphs ?? CRASH_GRAPHS.map((g) => g.name)).map(crashGraph);
  const modes = options.modes ?? [...DURABILITY_MODES];
  const concurrency = Math.max(1, options.concurrency ?? 2);
  const timeout = options.jobTimeoutMs ?? 60_000;
  const ownRoot = options.workDir === undefined;
  const root = options.workDir ?? mkdtempSync(join(tmpdir(), "resumable-crash-"));
  mkdirSync(root, { recursive: true });
  const bundle = await bundleChild(options.factoryModule, join(root, "bundle"));
  const probeDir = join(root, "probe");
  mkdirSync(probeDir, { recursive: true });
  const env = { ...process.env };
  delete env["RESUMABLE_CRASH_PROBE_DIR"];
  const pool = new ChildPool(bundle.args, env, concurrency);
  const report: CrashReport = {
    store: options.storeName ?? "store",
    applicable: true,
    quick: Boolean(options.quick),
    rows: [],
    cells: [],
    passed: 0,
    failed: 0,
    durationMs: 0,
    processes: 0,
  };
  let nextJob = 1;
  const job = (fields: Omit<JobRequest, "type" | "id">): JobRequest => ({ type: "job", id: nextJob++, ...fields });
  const runOn = async (request: JobRequest, excludePid?: number): Promise<JobOutcome> => {
    const child = await pool.acquire(excludePid);
    const outcome = await child.run(request, timeout);
    pool.release(child);
    return outcome;
  };

  try {
    const ready = await pool.probe(probeDir);
    report.store = options.storeName ?? ready.name;
    report.counting = ready.counting;
    if (!ready.persistent) {
      report.applicable = false;
      report.reason = `${report.store} does not outlive its process (capabilities.persistent is false): a crash loses everything by design`;
      for (const graph of graphs) {
        for (const mode of modes) {
          report.cells.push({ store: report.store, graph: graph.name, mode, kill: "all", status: "not applicable", messages: [report.reason] });
        }
      }
      return report;
    }

    let runId = 0;
    const unique = () => `${process.pid}-${Date.now().toString(36)}-${runId++}`;
    const baselineOf = async (graph: string, mode: Durability): Promise<Baseline> => {
      const workDir = join(root, `${graph}-${mode}-baseline`);
      mkdirSync(workDir, { recursive: true });
      const outcome = await runOn(job({ phase: "baseline", graph, mode, threadId: `crash-${graph}-${mode}-baseline-${unique()}`, workDir, worker: "baseline" }));
      if (outcome.kind !== "result") {
        throw new Error(`${graph} / ${mode}: the uncrashed run's process died (${outcome.signal ?? outcome.code}): ${outcome.stderr.trim()}`);
      }
      if (outcome.result.error) throw new Error(`${graph} / ${mode}: the uncrashed run failed: ${outcome.result.error}`);
      const violations = outcome.result.inspection?.violations ?? [];
      if (violations.length > 0) throw new Error(`${graph} / ${mode}: the uncrashed run already breaks invariants: ${violations.join("; ")}`);
      return { result: outcome.result, effects: countLedger(workDir), execs: readLog<ExecEntry>(join(workDir, SIDE_FILES.exec)) };
    };

    for (const graph of graphs) {
      // The reference history: in sync durability every step's checkpoint is written.
      let reference: Map<number, unknown>;
      const baselines = new Map<Durability, Baseline>();
      try {
        const sync = await baselineOf(graph.name, "sync");
        baselines.set("sync", sync);
        reference = new Map((sync.result.inspection?.checkpoints ?? []).filter((c) => c.ns === "" && c.step !== undefined).map((c) => [c.step!, c.values]));
      } catch (error) {
        for (const mode of modes) failRow(report, graph.name, mode, error);
        continue;
      }
      for (const mode of modes) {
        let baseline: Baseline;
        try {
          baseline = baselines.get(mode) ?? (await baselineOf(graph.name, mode));
        } catch (error) {
          failRow(report, graph.name, mode, error);
          continue;
        }
        const n = baseline.result.commands;
        const points: KillPoint[] = [
          ...sampleKs(n, options.quick).map((k) => ({ kind: "command" as const, k })),
          ...graph.effectNodes.map((node) => ({ kind: "node" as const, node })),
          ...(graph.resumeValue !== undefined ? [{ kind: "interrupt" as const }] : []),
        ];
        const exitSteps = new Set((baseline.result.inspection?.checkpoints ?? []).filter((c) => c.ns === "").map((c) => c.step));
        const row: CrashRow = { graph: graph.name, mode, commands: n, killPoints: points.length, passed: 0, failed: 0 };
        report.rows.push(row);
        const cells = await mapLimit(points, concurrency, async (point) => {
          const label = point.kind === "command" ? `k=${point.k}` : point.kind === "node" ? `in node ${point.node}` : "at interrupt";
          const workDir = join(root, `${graph.name}-${mode}-${label.replace(/[^a-z0-9=]+/gi, "-")}`);
          mkdirSync(workDir, { recursive: true });
          const threadId = `crash-${graph.name}-${mode}-${label.replace(/\s+/g, "-")}-${unique()}`;
          const crash = await runOn(job({ phase: "crash", graph: graph.name, mode, threadId, workDir, kill: point, worker: "crash" }));
          const resume = await runOn(job({ phase: "resume", graph: graph.name, mode, threadId, workDir, worker: "resume" }), crash.pid);
          const cell = check({
            store: report.store,
            graph: graph.name,
            mode,
            label,
            point,
            crash,
            resume,
            workDir,
            baseline,
            reference,
            exitSteps,
          });
          options.onCell?.(cell);
          if (!options.keepWorkDir && cell.status === "pass") rmSync(workDir, { recursive: true, force: true });
          return cell;
        });
        for (const cell of cells) {
          report.cells.push(cell);
          if (cell.status === "pass") row.passed++;
          else row.failed++;
        }
      }
    }
    return report;
  } finally {
    pool.close();
    report.processes = pool.started;
    report.passed = report.cells.filter((c) => c.status === "pass").length;
    report.failed = report.cells.filter((c) => c.status === "fail").length;
    report.durationMs = Date.now() - started;
    if (ownRoot && !options.keepWorkDir) rmSync(root, { recursive: true, force: true });
  }
}

function failRow(report: CrashReport, graph: string, mode: Durability, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  report.rows.push({ graph, mode, commands: 0, killPoints: 0, passed: 0, failed: 1 });
  report.cells.push({ store: report.store, graph, mode, kill: "uncrashed run", status: "fail", messages: [message] });
}

/** Every k in 1..n, or a sample of them that always includes the first and the last. */
export function sampleKs(n: number, quick: boolean | number | undefined): number[] {
  const all = Array.from({ length: n }, (_, i) => i + 1);
  if (!quick) return all;
  const count = typeof quick === "number" ? Math.max(2, Math.floor(quick)) : 6;
  if (n <= count) return all;
  const picked = new Set<number>();
  for (let i = 0; i < count; i++) picked.add(1 + Math.round((i * (n - 1)) / (count - 1)));
  return [...picked].sort((a, b) => a - b);
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function readLog<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as T];
      } catch {
        // A kill can cut the last line short.
        return [];
      }
    });
}

function countLedger(workDir: string): number {
  const dir = join(workDir, SIDE_FILES.ledger);
  return existsSync(dir) ? readdirSync(dir).length : 0;
}

/** Executions as a multiset of logical tasks (node, namespace, step, path), which do not depend on task ids. */
function logicalTask(e: ExecEntry): string {
  return `${e.ns}\u0000${e.step}\u0000${e.node}\u0000${e.path}`;
}

interface CheckInput {
  store: string;
  graph: string;
  mode: Durability;
  label: string;
  point: KillPoint;
  crash: JobOutcome;
  resume: JobOutcome;
  workDir: string;
  baseline: Baseline;
  reference: Map<number, unknown>;
  exitSteps: Set<number | undefined>;
}

function brief(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? "undefined" : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function check(input: CheckInput): CrashCell {
  const { graph, mode, label, crash, resume, workDir, baseline } = input;
  const where = `${graph} / ${mode} / ${label}`;
  const problems: string[] = [];
  const notes: string[] = [];
  const cell: CrashCell = { store: input.store, graph, mode, kill: label, status: "pass", messages: [] };
  if (input.point.kind === "command") cell.k = input.point.k;
  const killFile = join(workDir, SIDE_FILES.kill);
  const killed = existsSync(killFile) ? (JSON.parse(readFileSync(killFile, "utf8")) as { command?: string }) : undefined;
  if (killed?.command) cell.command = killed.command;

  if (crash.kind === "died") {
    if (!killed) problems.push(`the crashing process died without reaching its kill point (${crash.signal ?? crash.code}): ${crash.stderr.trim().slice(-500)}`);
  } else if (crash.result.error) {
    problems.push(`the run failed before its kill point: ${crash.result.error}`);
  } else {
    notes.push(`the run ended after ${crash.result.commands} commands, before its kill point`);
  }

  if (resume.kind === "died") {
    cell.status = "fail";
    cell.messages = [...problems, `${where}: the resuming process died (${resume.signal ?? resume.code}): ${resume.stderr.trim().slice(-500)}`].map((m) =>
      m.startsWith(where) ? m : `${where}: ${m}`,
    );
    return cell;
  }
  const result = resume.result;
  cell.actions = result.actions;
  const inspection = result.inspection;
  cell.checkpointsAtKill = inspection?.checkpoints.length ?? 0;
  problems.push(...(inspection?.violations ?? []));
  if (result.error) problems.push(`resuming failed: ${result.error}`);

  // Every root checkpoint on disk after the kill holds the state the uncrashed run had at that step.
  const rootCheckpoints = (inspection?.checkpoints ?? []).filter((c) => c.ns === "");
  for (const checkpoint of rootCheckpoints) {
    if (checkpoint.step === undefined || !input.reference.has(checkpoint.step)) continue;
    const expected = input.reference.get(checkpoint.step);
    if (checkpoint.values !== undefined && !isDeepStrictEqual(checkpoint.values, expected)) {
      problems.push(
        `checkpoint ${checkpoint.id} (step ${checkpoint.step}) holds ${brief(checkpoint.values)}, the uncrashed run had ${brief(expected)} at that step`,
      );
    }
  }
  if (!result.error && !isDeepStrictEqual(result.final, baseline.result.final)) {
    problems.push(`the final state is ${brief(result.final)}, the uncrashed run ended with ${brief(baseline.result.final)}`);
  }

  // The guarded side effect: as often as in the uncrashed run, whatever was re-run.
  const attempts = readLog<AttemptEntry>(join(workDir, SIDE_FILES.attempts));
  cell.attempts = attempts.length;
  cell.effects = countLedger(workDir);
  if (cell.effects !== baseline.effects) {
    problems.push(
      `the guarded side effect happened ${cell.effects} time(s), the uncrashed run ${baseline.effects} (its idempotency key changed between attempts)`,
    );
  }

  // Tasks whose writes were durable are not run again.
  const execs = readLog<ExecEntry>(join(workDir, SIDE_FILES.exec));
  const resumed = execs.filter((e) => e.w === "resume");
  const allDurable = new Set((inspection?.checkpoints ?? []).map((c) => `${c.ns}\u0000${c.id}`));
  const writes = readLog<WriteLogEntry>(join(workDir, SIDE_FILES.writes)).filter((w) => w.w === "crash");
  const doneTasks = new Set(
    writes
      .filter(
        (w) =>
          w.event === "writes-resolved" &&
          allDurable.has(`${w.ns}\u0000${w.checkpointId}`) &&
          (w.channels ?? []).some((c) => !["__interrupt__", "__error__", "__resume__"].includes(c)),
      )
      .map((w) => w.taskId),
  );
  for (const e of resumed) {
    if (doneTasks.has(e.taskId)) {
      problems.push(`node "${e.node}" (task ${e.taskId}, step ${e.step}) ran again although its writes were durable`);
    }
  }

  // The restart point matches the durability mode. A task of step t runs from the checkpoint of step
  // t - 1, so a task at or before the latest durable step must not run again in any mode; "sync"
  // also bounds it from the other side: only the step in flight may be redone.
  const latest = Math.max(-Infinity, ...rootCheckpoints.map((c) => c.step ?? -Infinity));
  if (mode === "exit") {
    for (const checkpoint of rootCheckpoints) {
      if (!input.exitSteps.has(checkpoint.step)) {
        problems.push(`checkpoint ${checkpoint.id} (step ${checkpoint.step}) is durable mid-run, but "exit" durability writes only when a run ends`);
      }
    }
  }
  const expected = new Map<string, number>();
  for (const e of baseline.execs.filter((x) => x.ns === "")) expected.set(logicalTask(e), (expected.get(logicalTask(e)) ?? 0) + 1);
  const inFlight = Math.max(-Infinity, ...execs.filter((e) => e.w === "crash" && e.ns === "").map((e) => e.step));
  const seen = new Map<string, number>();
  for (const e of execs.filter((x) => x.ns === "")) {
    const id = logicalTask(e);
    const count = (seen.get(id) ?? 0) + 1;
    seen.set(id, count);
    if (count <= (expected.get(id) ?? 0)) continue;
    if (e.step <= latest) {
      problems.push(`node "${e.node}" of step ${e.step} was redone although the checkpoint of step ${latest}, after it, was durable`);
    } else if (mode === "sync" && e.step < inFlight) {
      problems.push(`node "${e.node}" of step ${e.step} was redone, but "sync" durability redoes at most the step in flight (step ${inFlight})`);
    }
  }
  if ((inspection?.orphanedWrites ?? 0) > 0) notes.push(`${inspection?.orphanedWrites} resolved write batch(es) on a checkpoint that never became durable`);

  cell.status = problems.length > 0 ? "fail" : "pass";
  cell.messages = problems.length > 0 ? problems.map((m) => `${where}${cell.command ? ` (after ${cell.command})` : ""}: ${m}`) : notes;
  return cell;
}
