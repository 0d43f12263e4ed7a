/**
 * The chaos test, DBOS-style: several worker processes share one database and resume refund threads
 * while a killer strikes a random worker every 0.5-2 s: it SIGKILLs it (a new one starts in its
 * place) or, at a share of the strikes, freezes it past its lease TTL and thaws it (a stale worker
 * that wakes up after another took its threads over; fencing must refuse its writes). A poison
 * thread fails every time. At the end every thread must be done, or dead-lettered (the poison one,
 * after `maxAttempts` attempts, with its error in its status, in `listThreads` and in `getState()`),
 * every card charged exactly once, every e-mail sent once, and no
 * thread may have a checkpoint with two children.
 *
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { InvalidConfigError } from "@resumable/core";

import { bundleChild, siblingModule, type ChildBundle } from "../crash/bundle.js";
import { ChaosLedger, POISON_MESSAGE, POISON_ORDER } from "./refund.js";
import type { ChaosJob, ChaosVerification } from "./worker.js";

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /**
   * A module whose default export returns the store (or a Resumable saver) under test, as for the
   * crash suite: `({ workDir }) => store`. Every process of one run calls it with the same `workDir`
   * and must reach the same database. The store must declare `leases` and `threadStatus`.
   */
  factoryModule: string;
  /**
   * Path of the module that exports `RecoveryRunner`: `@resumable/recovery`'s entry. The suite does not
   * depend on that package (its tests depend on this suite); the workers bundle the module given here.
   * Default: `@resumable/recovery` as the working directory's project resolves it
   * (`node_modules/@resumable/recovery/dist/esm/index.js`).
   */
  recoveryModule?: string;
  /** A name for the report. Default: the module's file name. */
  storeName?: string;
  /** Refund threads, plus one poison thread. Default 200. */
  threads?: number;
  /** Worker processes. Default 4. */
  workers?: number;
  /** Threads each worker resumes at once. Default 4. */
  concurrency?: number;
  /** The killer's pause between two strikes, drawn uniformly from this range in ms. Default [500, 2000]. */
  killEveryMs?: [number, number];
  /**
   * The share of strikes that freeze a worker (SIGSTOP) for longer than the lease TTL, then thaw it
   * (SIGCONT), instead of killing it: a stale worker, whose leases others take over while it sleeps,
   * wakes up in the middle of its nodes and tries to write. A freeze picks a worker in the middle of
   * an attempt (waiting up to a second for one). Spread evenly from the first strike: 0.25 freezes
   * strikes 1, 5, 9... Default 0.25.
   */
  freezeShare?: number;
  /** Attempts before a thread is dead-lettered. Default 4. */
  maxAttempts?: number;
  /** Lease TTL of the workers, in ms (a killed worker's threads are free again after it). Default 2000. */
  leaseTtlMs?: number;
  /**
   * How often each worker's runner and its scripted reviewer look for work, in ms. Default 100. A
   * slow database (an emulator that serves one request at a time) may want more: 4 workers polling
   * every 100 ms send it 80 listThreads a second before doing any work.
   */
  pollIntervalMs?: number;
  /** Give up (and fail) when the threads are not all finished after this long. Default 5 minutes. */
  timeoutMs?: number;
  /** Where the run's files go (ledger, logs, a file database); default a new temporary directory. */
  workDir?: string;
  /** Keep the work directory afterwards. Default `false`. */
  keepWorkDir?: boolean;
  /** Progress, about once a second. */
  onProgress?: (progress: ChaosProgress) => void;
}

/** Where a run is. */
export interface ChaosProgress {
  elapsedMs: number;
  /** Threads whose e-mail went out (their last step). */
  finished: number;
  threads: number;
  kills: number;
  freezes: number;
}

/** What a run found; {@link formatChaosReport} prints it. */
export interface ChaosReport {
  store: string;
  passed: boolean;
  /** Each broken rule, as a sentence naming the thread. */
  failures: string[];
  threads: number;
  workers: number;
  durationMs: number;
  kills: number;
  /** Workers frozen past their lease TTL and thawed. */
  freezes: number;
  /** Worker processes started in all (the first ones and their replacements). */
  processes: number;
  done: number;
  dead: number;
  /** Threads neither done nor dead at the end, with their state. */
  unfinished: Record<string, string>;
  poison: { state: string; attempts: number; error?: string } | null;
  /** Orders charged (one charge each expected) and calls to the charge (what the card would have seen without the key). */
  charges: { orders: number; calls: number; twice: number };
  emails: { threads: number; calls: number; twice: number };
  /** Resumes the runners started, lease takeovers they saw, interrupts the reviewer answered. */
  resumes: number;
  leaseLost: number;
  /** Answers of the reviewer refused because its lease was taken over while it ran. */
  reviewsLost: number;
  reviewed: number;
  deadLettered: number;
  /** Checkpoints read back at the end, and forks found among them. */
  checkpoints: number;
  forks: string[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** One bundle per factory module, runner module and process: later runs reuse it. */
const bundles = new Map<string, Promise<ChildBundle>>();

/** `@resumable/recovery`'s ES module entry as the project in `cwd` installed it. */
export function defaultRecoveryModule(cwd = process.cwd()): string {
  let manifestPath: string;
  try {
    manifestPath = createRequire(join(cwd, "package.json")).resolve("@resumable/recovery/package.json");
  } catch {
    throw new InvalidConfigError(
      "recoveryModule",
      `the chaos test runs @resumable/recovery's RecoveryRunner, and it is not installed where ${cwd} looks: npm install -D @resumable/recovery, or pass recoveryModule (the path of a module exporting RecoveryRunner).`,
    );
  }
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { exports?: { ".": { import?: { default?: string } } } };
  return join(dirname(manifestPath), manifest.exports?.["."].import?.default ?? "dist/esm/index.js");
}

async function bundleFor(factoryModule: string, recoveryModule: string | undefined): Promise<ChildBundle> {
  const runner = recoveryModule ?? defaultRecoveryModule();
  const key = `${factoryModule}\0${runner}`;
  let bundle = bundles.get(key);
  if (!bundle) {
    const dir = mkdtempSync(join(tmpdir(), "resumable-chaos-bundle-"));
    // The runner's module is bundled (an absolute path), so that it and the worker share one copy of @resumable/core.
    bundle = bundleChild(factoryModule, dir, { module: siblingModule(import.meta.url, "worker"), exportName: "chaosMain", modules: [runner] });
    bundles.set(key, bundle);
  }
  return bundle;
}

/** Starts one chaos process; resolves with its exit. */
function start(bundle: ChildBundle, job: ChaosJob): { child: ChildProcess; exit: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> } {
  const child = spawn(process.execPath, bundle.args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, RESUMABLE_CHAOS: JSON.stringify(job) } });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal, stderr }));
    child.on("error", () => resolve({ code: -1, signal: null, stderr }));
  });
  return { child, exit };
}

/** Runs a one-shot process (enqueue, verify, invoke) and returns what it wrote to its result file. */
async function oneShot<T>(bundle: ChildBundle, job: ChaosJob & { resultFile: string }, timeoutMs: number): Promise<T> {
  const { child, exit } = start(bundle, job);
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const result = await exit;
  clearTimeout(timer);
  if (result.code !== 0 || !existsSync(job.resultFile)) {
    throw new Error(`the ${job.mode} process exited with ${result.signal ?? result.code}: ${result.stderr.trim() || "(no output)"}`);
  }
  return JSON.parse(readFileSync(job.resultFile, "utf8")) as T;
}

/**
 * Runs the chaos test against the store a factory module returns. See the module comment for what
 * it checks; the report lists every failure, and `passed` is true when there is none.
 *
 * @example
 * ```ts
 * const report = await runChaos({ factoryModule: fileURLToPath(new URL("./fixtures/chaos-store.ts", import.meta.url)) });
 * console.log(formatChaosReport(report));
 * expect(report.failures).toEqual([]);
 * ```
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const threads = options.threads ?? 200;
  const workers = options.workers ?? 4;
  const [killMin, killMax] = options.killEveryMs ?? [500, 2000];
  const maxAttempts = options.maxAttempts ?? 4;
  const leaseTtlMs = options.leaseTtlMs ?? 2000;
  const timeoutMs = options.timeoutMs ?? 5 * 60_000;
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "resumable-chaos-"));
  mkdirSync(workDir, { recursive: true });
  const run = Math.random().toString(36).slice(2, 8);
  const ids = Array.from({ length: threads }, (_, i) => ({ threadId: `chaos-${run}-${String(i).padStart(4, "0")}`, orderId: `R-${1000 + i}`, customer: `customer ${i}` }));
  const poison = { threadId: `chaos-${run}-poison`, orderId: POISON_ORDER, customer: "poison" };
  const all = [...ids, poison];
  const ledger = new ChaosLedger(join(workDir, "ledger"));
  const bundle = await bundleFor(options.factoryModule, options.recoveryModule);
  const started = performance.now();
  const stopFile = join(workDir, "stop");
  rmSync(stopFile, { force: true });
  let kills = 0;
  let freezes = 0;
  let strikes = 0;
  let processes = 0;
  const freezeShare = options.freezeShare ?? 0.25;
  const live = new Map<number, { child: ChildProcess; exit: Promise<unknown>; eventsFile: string }>();
  const frozen = new Set<ChildProcess>();
  let stopping = false;
  try {
    await oneShot(bundle, { mode: "enqueue", workDir, threads: all, resultFile: join(workDir, "enqueued.json") }, 120_000);
    const launch = (worker: number) => {
      processes += 1;
      const job: ChaosJob = { mode: "work", workDir, worker, stopFile, eventsFile: join(workDir, `events-${worker}-${processes}.jsonl`), maxAttempts, leaseTtlMs, concurrency: options.concurrency ?? 4, pollIntervalMs: options.pollIntervalMs ?? 100 };
      const proc = { ...start(bundle, job), eventsFile: job.eventsFile };
      live.set(worker, proc);
      // A worker that dies (killed, or crashed on its own) is replaced, as a supervisor would.
      void proc.exit.then(() => {
        frozen.delete(proc.child);
        if (live.get(worker) === proc && !stopping) launch(worker);
      });
    };
    for (let w = 0; w < workers; w += 1) launch(w);
    const deadline = performance.now() + timeoutMs;
    const strikeGap = () => killMin + Math.random() * (killMax - killMin);
    let nextStrike = performance.now() + strikeGap();
    let lastProgress = 0;
    // The ledger is the cheap gauge: once every e-mail went out and the poison thread was
    // dead-lettered, the killer stops and the status index decides when every thread has settled
    // (a worker killed after the e-mail and before the last checkpoint leaves its thread pending).
    const gaugeFull = () => ledger.emailsSent() >= threads && deadLettered(workDir) > 0;
    while (!gaugeFull() && performance.now() < deadline) {
      await sleep(50);
      const now = performance.now();
      if (now >= nextStrike) {
        const victims = [...live.values()].filter((proc) => proc.child.exitCode === null && proc.child.signalCode === null && !frozen.has(proc.child));
        // Freezes spread evenly over the strikes, starting with the first (at 0.25: strikes 1, 5, 9...),
        // so that every run has some, however short.
        const freeze = Math.ceil((strikes + 1) * freezeShare) > Math.ceil(strikes * freezeShare);
        // A freeze hits a worker in the middle of an attempt, so that it wakes up holding threads others
        // took over (freezing an idle or booting worker tests nothing). When none is, the freeze waits
        // for one, at most a second past its time.
        const busy = freeze ? victims.filter((proc) => attemptsInFlight(proc.eventsFile) > 0) : [];
        if (freeze && busy.length === 0 && now < nextStrike + 1000) continue;
        const pool = busy.length > 0 ? busy : victims;
        const victim = pool[Math.floor(Math.random() * pool.length)];
        strikes += 1;
        if (victim && freeze) {
          // Frozen past its TTL: its leases expire, another worker takes its threads over, then it wakes up.
          if (victim.child.kill("SIGSTOP")) {
            freezes += 1;
            frozen.add(victim.child);
            setTimeout(() => {
              if (frozen.delete(victim.child)) victim.child.kill("SIGCONT");
            }, leaseTtlMs + 500 + Math.random() * 1000);
          }
        } else if (victim?.child.kill("SIGKILL")) {
          kills += 1;
        }
        nextStrike = now + strikeGap();
      }
      if (now - lastProgress > 1000) {
        lastProgress = now;
        options.onProgress?.({ elapsedMs: Math.round(now - started), finished: ledger.emailsSent(), threads, kills, freezes });
      }
    }
    for (const child of frozen) child.kill("SIGCONT");
    frozen.clear();
    while (performance.now() < deadline) {
      const census = await oneShot<{ open: number }>(bundle, { mode: "census", workDir, resultFile: join(workDir, "census.json") }, 60_000);
      if (census.open === 0) break;
      await sleep(500);
    }
  } finally {
    stopping = true;
    writeFileSync(stopFile, "");
    for (const child of frozen) child.kill("SIGCONT");
    const exits = [...live.values()].map(async (proc) => {
      const timer = setTimeout(() => proc.child.kill("SIGKILL"), 15_000);
      await proc.exit;
      clearTimeout(timer);
    });
    await Promise.all(exits);
  }
  const durationMs = Math.round(performance.now() - started);
  const verification = await oneShot<ChaosVerification>(bundle, { mode: "verify", workDir, threadIds: all.map((t) => t.threadId), poisonId: poison.threadId, resultFile: join(workDir, "verified.json") }, 300_000);
  const report = buildReport(options, workDir, all, poison.threadId, verification, { threads, workers, durationMs, kills, freezes, processes, maxAttempts });
  if (!options.keepWorkDir && !options.workDir) rmSync(workDir, { recursive: true, force: true });
  return report;
}

/** Attempts a worker process has started and not finished, from its events file. */
function attemptsInFlight(eventsFile: string): number {
  let text: string;
  try {
    text = readFileSync(eventsFile, "utf8");
  } catch {
    return 0;
  }
  const open = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line) continue;
    let event: { type?: string; threadId?: string };
    try {
      event = JSON.parse(line) as { type?: string; threadId?: string };
    } catch {
      continue; // a line cut short by a kill
    }
    if (event.threadId === undefined) continue;
    if (event.type === "claimed") open.add(event.threadId);
    else if (event.type === "resumed" || event.type === "error" || event.type === "dead-lettered") open.delete(event.threadId);
  }
  return open.size;
}

/** Dead-letter events logged by the workers so far. */
function deadLettered(workDir: string): number {
  let n = 0;
  for (const file of readdirSync(workDir).filter((f) => f.startsWith("events-"))) {
    n += readFileSync(join(workDir, file), "utf8").split("\n").filter((l) => l.includes('"type":"dead-lettered"')).length;
  }
  return n;
}

function buildReport(
  options: ChaosOptions,
  workDir: string,
  all: Array<{ threadId: string }>,
  poisonId: string,
  verification: ChaosVerification,
  run: { threads: number; workers: number; durationMs: number; kills: number; freezes: number; processes: number; maxAttempts: number },
): ChaosReport {
  const failures: string[] = [];
  const events: Array<{ type: string; outcome?: string; threadId?: string; error?: string }> = [];
  for (const file of readdirSync(workDir).filter((f) => f.startsWith("events-"))) {
    for (const line of readFileSync(join(workDir, file), "utf8").split("\n")) {
      if (!line) continue;
      try {
        events.push(JSON.parse(line) as (typeof events)[number]);
      } catch {
        // A worker killed mid-line leaves half a line; the rest of its log stands.
      }
    }
  }
  const { charges, emails, chargeCalls, emailCalls } = new ChaosLedger(join(workDir, "ledger")).tally();
  const unfinished: Record<string, string> = {};
  let done = 0;
  let dead = 0;
  for (const { threadId } of all) {
    const status = verification.statuses[threadId];
    const state = status?.state ?? "no status";
    if (state === "done") done += 1;
    else if (state === "dead") dead += 1;
    else unfinished[threadId] = state;
    if (threadId === poisonId) continue;
    if (state !== "done") failures.push(`thread ${threadId} ended ${state}${status?.error ? ` (${status.error})` : ""}, not done`);
    const charged = charges.get(threadId) ?? 0;
    if (charged !== 1) failures.push(`thread ${threadId}: the card was charged ${charged} times, not once`);
    const sent = emails.get(threadId) ?? 0;
    if (sent !== 1) failures.push(`thread ${threadId}: ${sent} e-mails were sent, not one`);
  }
  const poison = verification.statuses[poisonId] ?? null;
  if (poison?.state !== "dead") failures.push(`the poison thread ended ${poison?.state ?? "without a status"}, not dead-lettered`);
  else {
    if (poison.attempts !== run.maxAttempts) failures.push(`the poison thread was dead-lettered after ${poison.attempts} attempts, not ${run.maxAttempts}`);
    if (!poison.error?.includes(POISON_MESSAGE)) failures.push(`the poison thread's dead letter does not carry its error: ${poison.error ?? "(none)"}`);
  }
  if ((charges.get(poisonId) ?? 0) > 0) failures.push("the poison thread charged a card");
  const listed = verification.deadListed.find((t) => t.threadId === poisonId);
  if (!listed) failures.push(`listThreads({ status: "dead" }) does not list the poison thread`);
  else if (!listed.error?.includes(POISON_MESSAGE)) failures.push(`listThreads({ status: "dead" }) lists the poison thread without its error: ${listed.error ?? "(none)"}`);
  for (const { threadId } of verification.deadListed) if (threadId !== poisonId) failures.push(`listThreads({ status: "dead" }) lists ${threadId}, which should have been done`);
  if (!verification.poisonTaskErrors.some((e) => e.includes(POISON_MESSAGE))) {
    failures.push(`getState() of the poison thread shows no task error with its message (task errors: ${JSON.stringify(verification.poisonTaskErrors)})`);
  }
  const forks = Object.entries(verification.forks).flatMap(([thread, list]) => list.map((f) => `thread ${thread}: ${f}`));
  for (const fork of forks) failures.push(`forked: ${fork}`);
  const twice = (m: Map<string, number>) => [...m.values()].filter((n) => n > 1).length;
  return {
    store: options.storeName ?? options.factoryModule.split(/[\\/]/).pop()!.replace(/\.[cm]?[jt]s$/, ""),
    passed: failures.length === 0,
    failures,
    threads: run.threads,
    workers: run.workers,
    durationMs: run.durationMs,
    kills: run.kills,
    freezes: run.freezes,
    processes: run.processes,
    done,
    dead,
    unfinished,
    poison,
    charges: { orders: charges.size, calls: chargeCalls, twice: twice(charges) },
    emails: { threads: emails.size, calls: emailCalls, twice: twice(emails) },
    resumes: events.filter((e) => e.type === "claimed").length,
    leaseLost: events.filter((e) => e.type === "resumed" && e.outcome === "lease-lost").length,
    reviewsLost: events.filter((e) => e.type === "review-failed" && /LeaseLost|lease was lost|lease/i.test(e.error ?? "")).length,
    reviewed: events.filter((e) => e.type === "reviewed").length,
    deadLettered: events.filter((e) => e.type === "dead-lettered").length,
    checkpoints: verification.checkpoints,
    forks,
  };
}

/** The report as a few lines of text. */
export function formatChaosReport(report: ChaosReport): string {
  const lines = [
    `Chaos test on ${report.store}: ${report.passed ? "PASSED" : "FAILED"} in ${(report.durationMs / 1000).toFixed(1)} s`,
    `  ${report.threads} refund threads + 1 poison thread, ${report.workers} workers; ${report.kills} SIGKILLs, ${report.freezes} freezes past the lease TTL, ${report.processes} worker processes started`,
    `  done ${report.done}, dead-lettered ${report.dead}${Object.keys(report.unfinished).length > 0 ? `, unfinished ${Object.keys(report.unfinished).length}` : ""}; ` +
      `poison: ${report.poison ? `${report.poison.state} after ${report.poison.attempts} attempts (${report.poison.error ?? "no error"})` : "no status"}`,
    `  cards charged ${report.charges.orders} (${report.charges.calls} charge calls, ${report.charges.twice} orders charged twice); ` +
      `e-mails ${report.emails.threads} (${report.emails.calls} calls, ${report.emails.twice} sent twice)`,
    `  attempts (resumes the runners counted) ${report.resumes}, dead letters ${report.deadLettered}, stopped by a lease takeover ${report.leaseLost} (and ${report.reviewsLost} reviews), interrupts answered ${report.reviewed}; ${report.checkpoints} checkpoints read back, ${report.forks.length} forks`,
  ];
  for (const failure of report.failures.slice(0, 20)) lines.push(`  ✗ ${failure}`);
  if (report.failures.length > 20) lines.push(`  … and ${report.failures.length - 20} more`);
  return lines.join("\n");
}

/** Options of {@link runTwoProcessInvoke}. */
export interface TwoProcessInvokeOptions {
  /** The store's factory module, as for {@link runChaos}. */
  factoryModule: string;
  /** As for {@link runChaos} (the processes share the chaos workers' bundle). */
  recoveryModule?: string;
  /** Take a lease per turn (the fix) or invoke as LangGraph does by itself (the bug). */
  leases: boolean;
  /** Turns per process. Default 4. */
  turns?: number;
  workDir?: string;
}

/** What {@link runTwoProcessInvoke} found. */
export interface TwoProcessInvokeResult {
  /** Checkpoints with more than one child. */
  forks: string[];
  /** Inputs in the final state's lineage (2 × turns when no turn dropped out). */
  inputsInLineage: number;
  turns: number;
}

/**
 * Two processes invoke one thread at the same moment, `turns` times each: with `leases: false` as
 * LangGraph does by itself (the thread forks: one checkpoint gets two children and a turn drops out
 * of the lineage), with `leases: true` through `claimLease` and `withLease` (it must not).
 */
export async function runTwoProcessInvoke(options: TwoProcessInvokeOptions): Promise<TwoProcessInvokeResult> {
  const bundle = await bundleFor(options.factoryModule, options.recoveryModule);
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "resumable-two-process-"));
  const threadId = `two-process-${Math.random().toString(36).slice(2, 8)}`;
  const turns = options.turns ?? 4;
  try {
    const goFile = join(workDir, `${threadId}.go`);
    const names = ["first", "second"];
    const readyFile = (name: string) => join(workDir, `${threadId}.${name}.ready`);
    const runs = Promise.all(
      names.map((name) =>
        oneShot(bundle, { mode: "invoke", workDir, threadId, name, names, turns, leases: options.leases, readyFile: readyFile(name), goFile, resultFile: join(workDir, `${name}.json`) }, 120_000),
      ),
    );
    // A barrier rather than a start time: on a loaded machine one process may take seconds to start.
    let settled = false;
    void runs.finally(() => (settled = true)).catch(() => undefined);
    while (!settled && !names.every((name) => existsSync(readyFile(name)))) await sleep(5);
    writeFileSync(goFile, "");
    await runs;
    const verification = await oneShot<ChaosVerification>(bundle, { mode: "verify", workDir, threadIds: [threadId], resultFile: join(workDir, "verified.json") }, 120_000);
    const log = verification.logs[threadId] ?? [];
    return { forks: verification.forks[threadId] ?? [], inputsInLineage: log.filter((entry) => /^(first|second):\d+$/.test(entry)).length, turns };
  } finally {
    if (!options.workDir) rmSync(workDir, { recursive: true, force: true });
  }
}
