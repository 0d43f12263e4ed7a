/**
 * A pool of warm child processes. Starting Node and loading LangGraph costs far more than a crash job,
 * so a spare child is started while others work, and a child that was not killed takes the next job.
 *
 * @module
 */
import { spawn, type ChildProcess } from "node:child_process";
import type { ChildMessage, ChildReady, JobRequest, JobResult } from "./protocol.js";

/** How a job ended: with a result, or with the process dead. */
export type JobOutcome<Result = JobResult> =
  | { kind: "result"; result: Result; pid: number }
  | { kind: "died"; signal: NodeJS.Signals | null; code: number | null; stderr: string; pid: number };

/** What a job message needs: an id its result answers with (the retention sweep sends its own jobs). */
interface AnyJob {
  id: number;
}

/** What a result message needs. */
interface AnyResult {
  type: "result";
  id: number;
}

/** Thrown when the child could not load the factory. */
export class CrashChildError extends Error {}

class Child {
  readonly process: ChildProcess;
  readonly ready: Promise<ChildReady>;
  private stderr = "";
  private exited: { signal: NodeJS.Signals | null; code: number | null } | undefined;
  private readonly waiters = new Set<() => void>();
  private result: ((message: AnyResult) => void) | undefined;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.process = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe", "ipc"], env });
    this.process.stderr?.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    this.ready = new Promise<ChildReady>((resolve, reject) => {
      this.process.on("message", (message: ChildMessage | AnyResult) => {
        if (message.type === "ready") resolve(message);
        else if (message.type === "failed") reject(new CrashChildError(message.error));
        else if (message.type === "result") this.result?.(message);
      });
      this.process.on("exit", (code, signal) => {
        this.exited = { code, signal };
        reject(new CrashChildError(`the child process exited (${signal ?? code}) before it was ready: ${this.stderr.trim()}`));
        for (const wake of this.waiters) wake();
      });
    });
    this.ready.catch(() => undefined);
  }

  get pid(): number {
    return this.process.pid ?? -1;
  }

  get alive(): boolean {
    return this.exited === undefined;
  }

  run<Job extends AnyJob = JobRequest, Result extends AnyResult = JobResult>(job: Job, timeoutMs: number): Promise<JobOutcome<Result>> {
    return new Promise<JobOutcome<Result>>((resolve) => {
      const done = (outcome: JobOutcome<Result>) => {
        clearTimeout(timer);
        this.waiters.delete(onExit);
        this.result = undefined;
        resolve(outcome);
      };
      const onExit = () =>
        done({ kind: "died", signal: this.exited?.signal ?? null, code: this.exited?.code ?? null, stderr: this.stderr, pid: this.pid });
      const timer = setTimeout(() => {
        this.process.kill("SIGKILL");
      }, timeoutMs);
      this.result = (result) => {
        if (result.id === job.id) done({ kind: "result", result: result as Result, pid: this.pid });
      };
      this.waiters.add(onExit);
      if (!this.alive) onExit();
      else this.process.send(job);
    });
  }

  stop(): void {
    if (this.alive) this.process.kill("SIGKILL");
  }
}

/** Warm children for one factory bundle. */
export class ChildPool {
  private readonly idle: Child[] = [];
  private readonly all = new Set<Child>();
  private starting = 0;
  private closed = false;
  private failure: Error | undefined;
  private readonly waiting: Array<() => void> = [];
  /** Processes started so far (for the report). */
  started = 0;

  constructor(
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly spares: number,
  ) {}

  private spawn(env: NodeJS.ProcessEnv = this.env): Child {
    const child = new Child(this.args, env);
    this.started++;
    this.all.add(child);
    child.process.on("exit", () => this.all.delete(child));
    return child;
  }

  /** Keeps `spares` children starting or idle, so that the next job does not wait for a start. */
  private topUp(): void {
    while (!this.closed && this.idle.length + this.starting < this.spares) this.startOne();
  }

  private startOne(): void {
    const child = this.spawn();
    this.starting++;
    child.ready.then(
      () => {
        this.starting--;
        if (this.closed) child.stop();
        else this.push(child);
      },
      (error: unknown) => {
        this.starting--;
        this.failure = error instanceof Error ? error : new CrashChildError(String(error));
        this.wake();
      },
    );
  }

  private push(child: Child): void {
    this.idle.push(child);
    this.wake();
  }

  private wake(): void {
    const waiting = this.waiting.splice(0);
    for (const wake of waiting) wake();
  }

  /**
   * Starts a child that loads the factory once and describes what it returned.
   *
   * @param probeDir The work directory handed to the factory for that.
   */
  async probe(probeDir: string): Promise<ChildReady> {
    const child = this.spawn({ ...this.env, RESUMABLE_CRASH_PROBE_DIR: probeDir });
    const ready = await child.ready;
    this.push(child);
    return ready;
  }

  /** A ready child whose pid is not `excludePid`. */
  async acquire(excludePid?: number): Promise<Child> {
    for (;;) {
      if (this.closed) throw new CrashChildError("the crash suite's process pool is closed");
      const index = this.idle.findIndex((c) => c.alive && c.pid !== excludePid);
      if (index >= 0) {
        const [child] = this.idle.splice(index, 1);
        this.topUp();
        return child!;
      }
      if (this.failure && this.starting === 0) throw this.failure;
      this.topUp();
      // Every idle child may be the excluded one: make sure another one is on its way.
      if (this.starting === 0) this.startOne();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
  }

  release(child: Child): void {
    if (child.alive && !this.closed) this.push(child);
  }

  close(): void {
    this.closed = true;
    for (const child of this.all) child.stop();
    this.idle.length = 0;
    this.wake();
  }
}

export type { Child };
