/**
 * `RecoveryRunner`: finds the unfinished threads of a database (through the thread-status index),
 * claims each with a lease, resumes it with `invoke(null)`, renews the lease while it runs, counts
 * attempts in the thread's status (outside graph state), backs off between attempts, and
 * dead-letters a thread after `maxAttempts` attempts that made no progress. Interrupted threads are
 * left for a person.
 *
 * @module
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";

import type { RunnableConfig } from "@langchain/core/runnables";
import {
  InvalidConfigError,
  LeaseLostError,
  ResumableSaver,
  type Lease,
  type ThreadState,
  type ThreadStatus,
} from "@resumable/core";

import { breakpointOf, leasedGraph, type RecoverableGraph } from "./graph.js";

/** The states the runner resumes. */
export type RecoverableState = Extract<ThreadState, "pending" | "failed">;

/** Exponential backoff between attempts of one thread. */
export interface BackoffOptions {
  /** Delay before the second attempt, in ms. Default 1000. */
  initialMs?: number;
  /** Each further attempt waits this many times longer. Default 2. */
  factor?: number;
  /** The longest delay, in ms. Default 300 000 (5 minutes). */
  maxMs?: number;
}

/** Options of {@link RecoveryRunner}. */
export interface RecoveryRunnerOptions {
  /**
   * The compiled graph whose threads the database holds (`builder.compile()`; its own checkpointer,
   * if any, is replaced by the leased saver for each resume).
   */
  graph: RecoverableGraph;
  /** The saver over the database; its store must declare `leases` and `threadStatus`. */
  saver: ResumableSaver;
  /** This worker's id in leases. Default: host name, process id and a random part. */
  workerId?: string;
  /** How long a lease lasts without renewal, in ms. Default 30 000. A killed worker's threads are free again after it. */
  leaseTtlMs?: number;
  /** How often a running resume renews its lease, in ms. Default a third of `leaseTtlMs`. */
  renewEveryMs?: number;
  /** Attempts without progress after which a thread is dead-lettered. Default 5. */
  maxAttempts?: number;
  backoff?: BackoffOptions;
  /** Threads resumed at once by this runner. Default 4. */
  concurrency?: number;
  /** Pause between two scans of the status index, in ms. Default 1000. */
  pollIntervalMs?: number;
  /**
   * Resume only threads whose last activity is at least this old, in ms. Default 30 000. A lease
   * keeps two runners off one thread; this keeps a runner off threads an application is running
   * without a lease right now. Set it to 0 when every writer of the database holds leases.
   */
  idleMs?: number;
  /** The states to resume. Default `["pending", "failed"]`. */
  states?: RecoverableState[];
  /** Extra config of each resume (durability, callbacks, `recursionLimit`...); `thread_id` and `signal` are the runner's. */
  config?: (threadId: string) => RunnableConfig;
  /** Called for every event (claims, outcomes, dead letters, lost leases, errors), e.g. to log them. */
  onEvent?: (event: RecoveryEvent) => void;
}

/** What happened to one thread when the runner tried it. */
export type RecoveryOutcome =
  /** The resume ran to the end of the graph. */
  | "done"
  /** The resume reached an `interrupt()` (or a static breakpoint): it waits for a person. */
  | "interrupted"
  /** The resume failed (a node threw); the error is in the thread's status and in the event. */
  | "failed"
  /** The resume stopped with tasks left (a step limit, an abort); it will be tried again. */
  | "pending"
  /** After too many attempts the thread was moved to `"dead"`. */
  | "dead"
  /** Another worker took the lease over during the resume; this worker stopped. */
  | "lease-lost"
  /** Nothing to do: another worker holds the thread, it is not in a resumable state, or it is backing off. */
  | "skipped";

/** An event of {@link RecoveryRunnerOptions.onEvent}. */
export type RecoveryEvent =
  | { type: "claimed"; threadId: string; token: number; attempt: number }
  | { type: "resumed"; threadId: string; outcome: Exclude<RecoveryOutcome, "skipped" | "dead">; error?: string; ms: number }
  | { type: "dead-lettered"; threadId: string; attempts: number; error: string }
  | { type: "skipped"; threadId: string; reason: string }
  | { type: "error"; threadId?: string; error: unknown };

/** What one {@link RecoveryRunner.runOnce} did. */
export interface RecoveryPass {
  /** Threads looked at in the index. */
  scanned: number;
  /** Outcome of each thread the pass started, by thread id. */
  outcomes: Record<string, RecoveryOutcome>;
}

const DEFAULTS = {
  leaseTtlMs: 30_000,
  maxAttempts: 5,
  concurrency: 4,
  pollIntervalMs: 1000,
  idleMs: 30_000,
  backoff: { initialMs: 1000, factor: 2, maxMs: 300_000 },
} as const;

/** Index pages read per pass at most, so that a pass over a huge backlog still ends. */
const MAX_PAGES_PER_PASS = 20;
const PAGE = 100;

/** A worker id unique to this process: host, pid and 6 random bytes. */
export function defaultWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(6).toString("hex")}`;
}

/** The delay before attempt `attempts + 1`, given `attempts` attempts so far. */
export function backoffDelay(attempts: number, options: BackoffOptions = {}): number {
  if (attempts <= 0) return 0;
  const initial = options.initialMs ?? DEFAULTS.backoff.initialMs;
  const factor = options.factor ?? DEFAULTS.backoff.factor;
  const max = options.maxMs ?? DEFAULTS.backoff.maxMs;
  return Math.min(max, initial * factor ** (attempts - 1));
}

/**
 * Resumes the unfinished threads of a database, one lease per thread, so that any number of
 * runners (and workers of your own that hold leases) can share it.
 *
 * @example
 * ```ts
 * import { PostgresSaver } from "@resumable/postgres";
 * import { RecoveryRunner } from "@resumable/recovery";
 *
 * const saver = await PostgresSaver.connect(process.env.DATABASE_URL!);
 * const graph = builder.compile({ checkpointer: saver });
 * const runner = new RecoveryRunner({ graph, saver, maxAttempts: 5 });
 * runner.start();                       // scans every second, resumes up to 4 threads at once
 * process.on("SIGTERM", () => void runner.stop().then(() => saver.close()));
 * ```
 */
export class RecoveryRunner {
  readonly workerId: string;
  private readonly graph: RecoverableGraph;
  private readonly saver: ResumableSaver;
  private readonly leaseTtlMs: number;
  private readonly renewEveryMs: number;
  private readonly maxAttempts: number;
  private readonly backoff: BackoffOptions;
  private readonly concurrency: number;
  private readonly pollIntervalMs: number;
  private readonly idleMs: number;
  private readonly states: RecoverableState[];
  private readonly extraConfig: ((threadId: string) => RunnableConfig) | undefined;
  private readonly onEvent: ((event: RecoveryEvent) => void) | undefined;
  private readonly inflight = new Map<string, Promise<RecoveryOutcome>>();
  private readonly controllers = new Set<AbortController>();
  private loop: Promise<void> | undefined;
  private stopping = false;
  private wake: (() => void) | undefined;

  constructor(options: RecoveryRunnerOptions) {
    if (!options || typeof options.graph?.invoke !== "function" || typeof options.graph.getState !== "function") {
      throw new InvalidConfigError("graph", "RecoveryRunner: pass the compiled graph (builder.compile()) as `graph`.");
    }
    if (!(options.saver instanceof ResumableSaver)) {
      throw new InvalidConfigError("saver", "RecoveryRunner: `saver` must be a Resumable saver (PostgresSaver, SqliteSaver, new ResumableSaver(store)...).");
    }
    const caps = options.saver.capabilities;
    if (!caps.leases || !caps.threadStatus) {
      throw new InvalidConfigError(
        "saver",
        `RecoveryRunner: the saver's store must declare capabilities.leases and capabilities.threadStatus (it declares leases: ${caps.leases}, ` +
          `threadStatus: ${caps.threadStatus}); MemoryStore, SqliteStore, PostgresStore and RedisStore do.`,
      );
    }
    if (!options.saver.tracksStatus) {
      throw new InvalidConfigError("saver", "RecoveryRunner: the saver was created with threadStatus: false; the runner finds threads through their status.");
    }
    this.graph = options.graph;
    this.saver = options.saver;
    this.workerId = options.workerId ?? defaultWorkerId();
    this.leaseTtlMs = positive(options.leaseTtlMs ?? DEFAULTS.leaseTtlMs, "leaseTtlMs");
    this.renewEveryMs = positive(options.renewEveryMs ?? Math.max(1, Math.floor(this.leaseTtlMs / 3)), "renewEveryMs");
    if (this.renewEveryMs >= this.leaseTtlMs) {
      throw new InvalidConfigError("renewEveryMs", `RecoveryRunner: renewEveryMs (${this.renewEveryMs}) must be shorter than leaseTtlMs (${this.leaseTtlMs}), or leases lapse while threads run.`);
    }
    this.maxAttempts = positive(options.maxAttempts ?? DEFAULTS.maxAttempts, "maxAttempts");
    this.backoff = { ...DEFAULTS.backoff, ...options.backoff };
    this.concurrency = positive(options.concurrency ?? DEFAULTS.concurrency, "concurrency");
    this.pollIntervalMs = positive(options.pollIntervalMs ?? DEFAULTS.pollIntervalMs, "pollIntervalMs");
    this.idleMs = nonNegative(options.idleMs ?? DEFAULTS.idleMs, "idleMs");
    this.states = [...(options.states ?? ["pending", "failed"])];
    for (const state of this.states) {
      if (state !== "pending" && state !== "failed") {
        throw new InvalidConfigError("states", `RecoveryRunner: states may hold "pending" and "failed" only (interrupted threads wait for a person); got ${JSON.stringify(state)}.`);
      }
    }
    this.extraConfig = options.config;
    this.onEvent = options.onEvent;
  }

  /** Threads this runner is resuming right now. */
  get running(): string[] {
    return [...this.inflight.keys()];
  }

  /**
   * Scans the index once and starts a resume of each resumable thread it finds, up to `concurrency`
   * at once; resolves when those resumes have settled.
   */
  async runOnce(): Promise<RecoveryPass> {
    const { scanned, started } = await this.scan();
    const outcomes: Record<string, RecoveryOutcome> = {};
    await Promise.all(started.map(async ([threadId, promise]) => (outcomes[threadId] = await promise)));
    return { scanned, outcomes };
  }

  /** Starts scanning every `pollIntervalMs` in the background until {@link stop}. */
  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.loop = (async () => {
      while (!this.stopping) {
        try {
          await this.scan();
        } catch (error) {
          this.emit({ type: "error", error });
        }
        if (this.stopping) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.pollIntervalMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    })();
  }

  /**
   * Stops scanning and waits for the resumes in flight. With `abort: true` they are aborted (their
   * threads stay pending and are resumed later, by this or another runner).
   */
  async stop(options: { abort?: boolean } = {}): Promise<void> {
    this.stopping = true;
    this.wake?.();
    if (options.abort) for (const controller of this.controllers) controller.abort(new Error("the recovery runner is stopping"));
    await this.loop;
    this.loop = undefined;
    await Promise.allSettled([...this.inflight.values()]);
  }

  /** Reads the index and starts resumes; returns what it started. */
  private async scan(): Promise<{ scanned: number; started: Array<[string, Promise<RecoveryOutcome>]> }> {
    const started: Array<[string, Promise<RecoveryOutcome>]> = [];
    let scanned = 0;
    let cursor: string | undefined;
    const now = Date.now();
    for (let page = 0; page < MAX_PAGES_PER_PASS && this.inflight.size < this.concurrency && !this.stopping; page += 1) {
      const result = await this.saver.listThreads({ status: this.states, olderThan: now - this.idleMs + 1, limit: PAGE, cursor });
      for (const status of result.threads) {
        scanned += 1;
        if (this.inflight.size >= this.concurrency || this.stopping) break;
        if (this.inflight.has(status.threadId)) continue;
        // Cheap checks from the index row; the claimed thread's status is read again before acting.
        if (status.attempts > 0 && status.attempts < this.maxAttempts && (status.attemptedAt ?? 0) + backoffDelay(status.attempts, this.backoff) > now) continue;
        const promise = this.track(status.threadId);
        started.push([status.threadId, promise]);
      }
      cursor = result.cursor;
      if (cursor === undefined) break;
    }
    return { scanned, started };
  }

  private track(threadId: string): Promise<RecoveryOutcome> {
    const promise = this.recover(threadId)
      .catch((error: unknown) => {
        this.emit({ type: "error", threadId, error });
        return "skipped" as const;
      })
      .finally(() => this.inflight.delete(threadId));
    this.inflight.set(threadId, promise);
    return promise;
  }

  /**
   * Claims one thread and, when it is resumable, resumes it: the whole life of one attempt. Safe to
   * call for any thread id: a thread another worker holds, or one that is done, interrupted, dead or
   * backing off, is skipped.
   */
  async recover(threadId: string): Promise<RecoveryOutcome> {
    let lease = await this.saver.claimLease(threadId, { workerId: this.workerId, ttlMs: this.leaseTtlMs });
    if (!lease) return this.skip(threadId, "another worker holds its lease");
    const controller = new AbortController();
    this.controllers.add(controller);
    let lost: LeaseLostError | undefined;
    const onLost = (error: LeaseLostError) => {
      lost ??= error;
      controller.abort(error);
    };
    const leased = this.saver.withLease(lease, { onLost });
    const renewal = setInterval(() => {
      this.saver.renewLease(lease!, this.leaseTtlMs).then(
        (renewed) => (lease = renewed),
        (error: unknown) => {
          if (error instanceof LeaseLostError) onLost(error);
          else this.emit({ type: "error", threadId, error });
        },
      );
    }, this.renewEveryMs);
    renewal.unref?.();
    try {
      return await this.attempt(threadId, lease, leased, controller, () => lost);
    } finally {
      clearInterval(renewal);
      this.controllers.delete(controller);
      await this.saver.releaseLease(lease).catch(() => undefined);
    }
  }

  private async attempt(
    threadId: string,
    lease: Lease,
    leased: ResumableSaver,
    controller: AbortController,
    lost: () => LeaseLostError | undefined,
  ): Promise<RecoveryOutcome> {
    // Read under the lease: what the index said may be stale.
    const status = await this.saver.getThreadStatus(threadId);
    if (!status) return this.skip(threadId, "it has no status");
    if (!(this.states as ThreadState[]).includes(status.state)) return this.skip(threadId, `it is ${status.state}`);
    const wait = (status.attemptedAt ?? 0) + backoffDelay(status.attempts, this.backoff) - Date.now();
    if (status.attempts > 0 && status.attempts < this.maxAttempts && wait > 0) return this.skip(threadId, `backing off for ${wait} ms`);
    const graph = leasedGraph(this.graph, leased);
    const config: RunnableConfig = { configurable: { thread_id: threadId } };
    if (status.attempts >= this.maxAttempts) return this.deadLetter(threadId, leased, status);
    const breakpoint = await breakpointOf(this.graph, leased, config);
    if (breakpoint) {
      // A static breakpoint (interruptBefore) stopped the run: a person decides, as for interrupt().
      await leased.updateThreadStatus(threadId, { checkpointId: status.checkpointId, state: "interrupted", interrupts: { breakpoint: [{ value: breakpoint }] } });
      return this.skip(threadId, `it waits at a breakpoint before ${breakpoint.interruptBefore.join(", ")}`);
    }
    const counted = await leased.updateThreadStatus(threadId, { checkpointId: status.checkpointId, addAttempts: 1, attemptedAt: Date.now() });
    if (!counted) return this.skip(threadId, "its status changed while it was claimed");
    this.emit({ type: "claimed", threadId, token: lease.token, attempt: counted.attempts });
    const started = performance.now();
    const extra = this.extraConfig?.(threadId) ?? {};
    const runConfig: RunnableConfig = { ...extra, configurable: { ...extra.configurable, thread_id: threadId }, signal: mergeSignals(extra.signal, controller.signal) };
    let failure: unknown;
    try {
      await graph.invoke(null, runConfig);
    } catch (error) {
      failure = error;
    }
    const ms = Math.round(performance.now() - started);
    if (lost() || failure instanceof LeaseLostError) {
      this.emit({ type: "resumed", threadId, outcome: "lease-lost", ms });
      return "lease-lost";
    }
    if (failure !== undefined && controller.signal.aborted) {
      this.emit({ type: "resumed", threadId, outcome: "pending", error: errorText(failure), ms });
      return "pending";
    }
    // The graph's own view decides the outcome; the saver's status follows it.
    const state = await graph.getState(config);
    const checkpointId = state.config?.configurable?.["checkpoint_id"] as string | undefined;
    const interrupted = (state.tasks ?? []).some((t) => (t.interrupts?.length ?? 0) > 0);
    let outcome: Exclude<RecoveryOutcome, "skipped" | "dead" | "lease-lost">;
    if (failure !== undefined) outcome = "failed";
    else if (interrupted) outcome = "interrupted";
    else if (state.next.length === 0) outcome = "done";
    else outcome = "pending";
    if (outcome === "done" && checkpointId) {
      const now = await this.saver.getThreadStatus(threadId);
      // The saver tells done from pending by LangGraph's own rule; when a graph disagrees (a trigger
      // channel the rule does not know), the graph wins.
      if (now && now.checkpointId === checkpointId && now.state !== "done") {
        await leased.updateThreadStatus(threadId, { checkpointId, state: "done", error: null, interrupts: null });
      }
    } else if (outcome === "failed" && checkpointId) {
      const now = await this.saver.getThreadStatus(threadId);
      // A failure outside a node (no ERROR write): record it, so that attempts and the error stay with the thread.
      if (now && now.checkpointId === checkpointId && now.state !== "failed") {
        await leased.updateThreadStatus(threadId, { checkpointId, state: "failed", error: errorText(failure) });
      }
    }
    this.emit({ type: "resumed", threadId, outcome, ...(failure !== undefined ? { error: errorText(failure) } : {}), ms });
    return outcome;
  }

  private async deadLetter(threadId: string, leased: ResumableSaver, status: ThreadStatus): Promise<RecoveryOutcome> {
    const error = status.error ?? `no progress after ${status.attempts} attempts (last state: ${status.state})`;
    const updated = await leased.updateThreadStatus(threadId, {
      checkpointId: status.checkpointId,
      state: "dead",
      error: `dead-lettered after ${status.attempts} attempts: ${error}`,
    });
    if (!updated) return this.skip(threadId, "its status changed while it was claimed");
    this.emit({ type: "dead-lettered", threadId, attempts: status.attempts, error });
    return "dead";
  }

  private skip(threadId: string, reason: string): "skipped" {
    this.emit({ type: "skipped", threadId, reason });
    return "skipped";
  }

  private emit(event: RecoveryEvent): void {
    try {
      this.onEvent?.(event);
    } catch {
      // A logger that throws must not stop recovery.
    }
  }
}

function mergeSignals(a: AbortSignal | undefined, b: AbortSignal): AbortSignal {
  return a ? AbortSignal.any([a, b]) : b;
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.name && error.name !== "Error" ? `${error.name}: ${error.message}` : error.message;
  return String(error);
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new InvalidConfigError(name, `RecoveryRunner: "${name}" must be a positive integer, got ${String(value)}.`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 0) throw new InvalidConfigError(name, `RecoveryRunner: "${name}" must be a non-negative integer, got ${String(value)}.`);
  return value;
}
