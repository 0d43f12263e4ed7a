/**
 * A chaos-test process. The bundled entry calls {@link chaosMain} with the factory's default export;
 * `RESUMABLE_CHAOS` (JSON) says what to do:
 *
 * - `enqueue`: creates the threads, each with only its input (status pending), as a queue would;
 * - `work`: a worker until the stop file appears: a `RecoveryRunner` resuming pending and failed
 *   threads, and a scripted reviewer answering interrupted ones with `Command({ resume })`, each
 *   under a lease. The harness SIGKILLs workers at random;
 * - `verify`: reads every thread's status and checkpoints and writes what it found;
 * - `invoke`: invokes one thread `turns` times, with or without leases (the two-process case).
 *
 * @module
 */
import { appendFileSync, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import type { RunnableConfig } from "@langchain/core/runnables";
import { Command } from "@langchain/langgraph";
import { ResumableSaver, type CheckpointStore, type Lease } from "@resumable/core";

import { forks } from "../categories/leases.js";
import { pausingChainGraph, Counter } from "../graph-fixtures.js";
import { ChaosLedger, chaosRefundGraph } from "./refund.js";

/**
 * What the workers use of `@resumable/recovery`, typed here: the suite does not depend on the runner's
 * package (the runner's own tests depend on this suite), the harness bundles the module it is given.
 */
export interface ChaosRecoveryModule {
  RecoveryRunner: new (options: {
    graph: unknown;
    saver: ResumableSaver;
    workerId: string;
    idleMs: number;
    leaseTtlMs: number;
    renewEveryMs: number;
    maxAttempts: number;
    backoff: { initialMs: number; factor: number; maxMs: number };
    concurrency: number;
    pollIntervalMs: number;
    onEvent: (event: { type: string; threadId?: string; error?: unknown }) => void;
  }) => { start(): void; stop(options?: { abort?: boolean }): Promise<void> };
}

/** The graph with `saver` as its checkpointer (what `leasedGraph` of `@resumable/recovery` does). */
function leasedGraph<G extends object>(graph: G, saver: ResumableSaver): G {
  return Object.create(graph, { checkpointer: { value: saver, writable: true, enumerable: true, configurable: true } }) as G;
}

/** What the harness hands a chaos process. */
export type ChaosJob =
  | { mode: "enqueue"; workDir: string; threads: Array<{ threadId: string; orderId: string; customer: string }>; resultFile: string }
  | {
      mode: "work";
      workDir: string;
      worker: number;
      stopFile: string;
      eventsFile: string;
      maxAttempts: number;
      leaseTtlMs: number;
      concurrency: number;
      pollIntervalMs: number;
    }
  | { mode: "verify"; workDir: string; threadIds: string[]; poisonId?: string; resultFile: string }
  | { mode: "census"; workDir: string; resultFile: string }
  | { mode: "invoke"; workDir: string; threadId: string; name: string; names: string[]; turns: number; leases: boolean; readyFile: string; goFile: string; resultFile: string };

/** What `verify` writes. */
export interface ChaosVerification {
  statuses: Record<string, { state: string; attempts: number; error?: string } | null>;
  /** Checkpoints with more than one child, per thread. */
  forks: Record<string, string[]>;
  checkpoints: number;
  /** The `log` channel of each thread's latest checkpoint, when it has one (the two-process case). */
  logs: Record<string, string[]>;
  /** The threads `listThreads({ status: "dead" })` pages through, with their errors. */
  deadListed: Array<{ threadId: string; error?: string }>;
  /** The errors of the poison thread's tasks, as the graph's `getState()` shows them. */
  poisonTaskErrors: string[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function openSaver(factory: unknown, workDir: string): Promise<ResumableSaver> {
  const create = typeof factory === "function" ? factory : (factory as { create?: unknown } | undefined)?.create;
  if (typeof create !== "function") throw new Error("the factory module's default export is not a function returning a store");
  const subject = (await (create as (c: { workDir: string }) => unknown)({ workDir })) as CheckpointStore | ResumableSaver;
  const saver = subject instanceof ResumableSaver ? subject : new ResumableSaver(subject as CheckpointStore);
  await saver.setup();
  return saver;
}

/** Entry point of a chaos process. */
export async function chaosMain(factory: unknown, recovery: ChaosRecoveryModule): Promise<void> {
  const job = JSON.parse(process.env["RESUMABLE_CHAOS"] ?? "null") as ChaosJob | null;
  if (!job) throw new Error("RESUMABLE_CHAOS is not set: this module is started by runChaos()");
  const saver = await openSaver(factory, job.workDir);
  try {
    if (job.mode === "enqueue") await enqueue(saver, job);
    else if (job.mode === "work") await work(saver, job, recovery);
    else if (job.mode === "verify") await verify(saver, job);
    else if (job.mode === "census") await census(saver, job);
    else await invoke(saver, job);
  } finally {
    await saver.close();
  }
  process.exit(0);
}

async function enqueue(saver: ResumableSaver, job: Extract<ChaosJob, { mode: "enqueue" }>): Promise<void> {
  const graph = chaosRefundGraph(new ChaosLedger(join(job.workDir, "ledger"))).compile({ checkpointer: saver });
  for (const { threadId, orderId, customer } of job.threads) {
    // Only the input, as a request queue would leave it: a pending thread for the runners.
    await graph.updateState({ configurable: { thread_id: threadId } }, { orderId, customer }, "__start__");
  }
  writeFileSync(job.resultFile, JSON.stringify({ enqueued: job.threads.length }));
}

async function work(saver: ResumableSaver, job: Extract<ChaosJob, { mode: "work" }>, { RecoveryRunner }: ChaosRecoveryModule): Promise<void> {
  const log = (event: Record<string, unknown>) => appendFileSync(job.eventsFile, `${JSON.stringify({ at: Date.now(), pid: process.pid, worker: job.worker, ...event })}\n`);
  const graph = chaosRefundGraph(new ChaosLedger(join(job.workDir, "ledger"))).compile();
  const workerId = `chaos-worker-${job.worker}:${process.pid}`;
  const runner = new RecoveryRunner({
    graph,
    saver,
    workerId,
    idleMs: 0,
    leaseTtlMs: job.leaseTtlMs,
    renewEveryMs: Math.max(50, Math.floor(job.leaseTtlMs / 4)),
    maxAttempts: job.maxAttempts,
    backoff: { initialMs: 100, factor: 2, maxMs: 1000 },
    concurrency: job.concurrency,
    pollIntervalMs: job.pollIntervalMs,
    onEvent: (event) => {
      if (event.type === "skipped") return;
      log(event.type === "error" ? { type: "error", threadId: event.threadId, error: String(event.error) } : { ...event, error: event.error === undefined ? undefined : String(event.error) });
    },
  });
  log({ type: "started" });
  saveCodeCache();
  runner.start();
  // The scripted reviewer: answers every interrupt it finds, under the thread's lease.
  const reviewer = (async () => {
    while (!existsSync(job.stopFile)) {
      try {
        const page = await saver.listThreads({ status: "interrupted", limit: 8 });
        for (const thread of page.threads.sort(() => Math.random() - 0.5).slice(0, 2)) {
          const lease = await saver.claimLease(thread.threadId, { workerId: `${workerId}:reviewer`, ttlMs: job.leaseTtlMs });
          if (!lease) continue;
          try {
            const status = await saver.getThreadStatus(thread.threadId);
            if (status?.state !== "interrupted") continue;
            await answer(saver, graph, lease, thread.threadId, job.leaseTtlMs);
            log({ type: "reviewed", threadId: thread.threadId });
          } catch (error) {
            log({ type: "review-failed", threadId: thread.threadId, error: String(error) });
          } finally {
            await saver.releaseLease(lease).catch(() => undefined);
          }
        }
      } catch (error) {
        log({ type: "error", error: String(error) });
      }
      await sleep(job.pollIntervalMs);
    }
  })();
  while (!existsSync(job.stopFile)) await sleep(100);
  await reviewer;
  await runner.stop();
  log({ type: "stopped" });
}

/** The reviewer's answer, renewing the lease while the thread runs on to its end. */
async function answer(saver: ResumableSaver, graph: ReturnType<ReturnType<typeof chaosRefundGraph>["compile"]>, lease: Lease, threadId: string, ttlMs: number): Promise<void> {
  const controller = new AbortController();
  let current = lease;
  const renew = setInterval(() => {
    saver.renewLease(current, ttlMs).then(
      (l) => (current = l),
      () => controller.abort(new Error("the reviewer's lease was lost")),
    );
  }, Math.max(50, Math.floor(ttlMs / 4)));
  try {
    await leasedGraph(graph, saver.withLease(lease, { onLost: (e) => controller.abort(e) })).invoke(new Command({ resume: { approvedBy: "scripted reviewer" } }), {
      configurable: { thread_id: threadId },
      signal: controller.signal,
    });
  } finally {
    clearInterval(renew);
  }
}

async function verify(saver: ResumableSaver, job: Extract<ChaosJob, { mode: "verify" }>): Promise<void> {
  const result: ChaosVerification = { statuses: {}, forks: {}, checkpoints: 0, logs: {}, deadListed: [], poisonTaskErrors: [] };
  for (const threadId of job.threadIds) {
    const status = await saver.getThreadStatus(threadId);
    result.statuses[threadId] = status ? { state: status.state, attempts: status.attempts, ...(status.error ? { error: status.error } : {}) } : null;
    const found = await forks(saver, threadId);
    if (found.length > 0) result.forks[threadId] = found;
    for await (const _ of saver.list({ configurable: { thread_id: threadId } })) result.checkpoints += 1;
    const log = (await saver.getTuple({ configurable: { thread_id: threadId } }))?.checkpoint.channel_values["log"];
    if (Array.isArray(log)) result.logs[threadId] = log as string[];
  }
  let cursor: string | undefined;
  do {
    const page = await saver.listThreads({ status: "dead", limit: 100, ...(cursor ? { cursor } : {}) });
    for (const t of page.threads) if (job.threadIds.includes(t.threadId)) result.deadListed.push({ threadId: t.threadId, ...(t.error ? { error: t.error } : {}) });
    cursor = page.cursor;
  } while (cursor !== undefined);
  if (job.poisonId !== undefined) {
    const graph = chaosRefundGraph(new ChaosLedger(join(job.workDir, "ledger"))).compile({ checkpointer: saver });
    const state = await graph.getState({ configurable: { thread_id: job.poisonId } });
    for (const task of state.tasks) if (task.error !== undefined) result.poisonTaskErrors.push(String((task.error as { message?: unknown }).message ?? task.error));
  }
  writeFileSync(job.resultFile, JSON.stringify(result));
}

/** Whether any thread is still unfinished: pending, failed or waiting for the reviewer. */
async function census(saver: ResumableSaver, job: Extract<ChaosJob, { mode: "census" }>): Promise<void> {
  const open = await saver.listThreads({ status: ["pending", "failed", "interrupted"], limit: 1 });
  writeFileSync(job.resultFile, JSON.stringify({ open: open.threads.length }));
}

async function invoke(saver: ResumableSaver, job: Extract<ChaosJob, { mode: "invoke" }>): Promise<void> {
  const config: RunnableConfig = { configurable: { thread_id: job.threadId } };
  // Without leases, the first turn of each process waits inside node "b" until the other's is there
  // too (at most 30 s): by then each has read the thread and written its input checkpoint on what it
  // read, so the thread forks whatever the scheduling. With leases the other process cannot be there.
  let met = true; // not during the seed turn below
  const inside = (name: string) => `${job.goFile}.${name}.inside`;
  const pause = async () => {
    if (met) return sleep(20);
    met = true;
    writeFileSync(inside(job.name), "");
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !job.names.every((name) => existsSync(inside(name)))) await sleep(2);
  };
  const graph = pausingChainGraph(new Counter(), pause).compile();
  // The thread exists before the race (the first process writes one turn), so that both processes
  // read a checkpoint rather than an empty thread.
  if (job.name === job.names[0]) await leasedGraph(graph, saver).invoke({ log: ["seed"] }, config);
  met = job.leases;
  // Both processes start at the same moment, so that their runs overlap unless leases keep them apart:
  // each says it is ready (saver open, graph compiled), the harness says go when both are.
  writeFileSync(job.readyFile, "");
  while (!existsSync(job.goFile)) await sleep(2);
  let waited = 0;
  for (let turn = 0; turn < job.turns; turn += 1) {
    const input = { log: [`${job.name}:${turn}`] };
    if (!job.leases) {
      await leasedGraph(graph, saver).invoke(input, config);
      continue;
    }
    let lease: Lease | undefined;
    while (!(lease = await saver.claimLease(job.threadId, { workerId: job.name, ttlMs: 30_000 }))) {
      waited += 1;
      await sleep(5 + Math.random() * 10);
    }
    try {
      await leasedGraph(graph, saver.withLease(lease)).invoke(input, config);
    } finally {
      await saver.releaseLease(lease);
    }
  }
  writeFileSync(job.resultFile, JSON.stringify({ turns: job.turns, waited }));
}

function saveCodeCache(): void {
  const holder = globalThis as { __resumableSaveCodeCache?: () => void };
  const save = holder.__resumableSaveCodeCache;
  holder.__resumableSaveCodeCache = undefined;
  save?.();
}
