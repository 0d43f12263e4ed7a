/**
 * Messages between the crash harness (parent) and its child processes, and the side files a child
 * leaves in its work directory for the checker.
 *
 * @module
 */

/** LangGraph.js durability modes. */
export type Durability = "exit" | "async" | "sync";

/** Where a crash child kills itself with SIGKILL. */
export type KillPoint =
  /** Right after the k-th database command (or store/saver call, when the store reports no commands). */
  | { kind: "command"; k: number }
  /** Inside a node, after its guarded side effect and before it returns. */
  | { kind: "node"; node: string }
  /** While the run waits on an interrupt (after `invoke` returned with a pending interrupt). */
  | { kind: "interrupt" };

/** One job for a child. */
export interface JobRequest {
  type: "job";
  id: number;
  /**
   * `baseline`: run to the end without a kill (counts commands, records the state history).
   * `crash`: run with a kill point. `resume`: inspect what the crash left, resume to the end.
   */
  phase: "baseline" | "crash" | "resume";
  graph: string;
  mode: Durability;
  threadId: string;
  /** A directory of its own: the store's files (if the factory uses it) and the side logs. */
  workDir: string;
  kill?: KillPoint;
  /** A name for this process in the logs (`crash`, `resume`, `baseline`). */
  worker: string;
}

/** How a child counts the commands a kill point refers to. */
export type CommandCounting = "database commands" | "store calls" | "saver calls";

/** What the child found when it loaded the factory. */
export interface ChildReady {
  type: "ready";
  pid: number;
  /** CPU time from the process start to ready (loading the bundle and the factory), in milliseconds. */
  startCpuMs: number;
  /** The factory returned a `CheckpointStore` (`store`) or a `BaseCheckpointSaver` (`saver`). */
  kind: "store" | "saver";
  /** A label for the report: the class name of the store or saver. */
  name: string;
  persistent: boolean;
  counting: CommandCounting;
}

/** The factory module could not be loaded or did not return a store or saver. */
export interface ChildFailed {
  type: "failed";
  error: string;
}

/** A checkpoint as the checker saw it. */
export interface SeenCheckpoint {
  ns: string;
  id: string;
  parentId: string | undefined;
  step: number | undefined;
  /** User-visible state of a root checkpoint (`graph.getState` at that checkpoint). */
  values?: unknown;
}

/** What a resume child found on disk before resuming, or a baseline child after its run. */
export interface Inspection {
  checkpoints: SeenCheckpoint[];
  /** Broken invariants: each message says which checkpoint or write. */
  violations: string[];
  /** Writes that resolved on a checkpoint that never became durable (allowed; reported for information). */
  orphanedWrites: number;
}

/** The answer to a job. */
export interface JobResult {
  type: "result";
  id: number;
  /** The job's run ended (it may also have thrown: see `error`). */
  error?: string;
  /** Commands counted after setup. */
  commands: number;
  /** Names of the commands, in order (baseline only). */
  commandNames?: string[];
  /** Before resuming (resume) or after the run (baseline). */
  inspection?: Inspection;
  /** What the resume loop did: `start over`, `continue`, `resume interrupt`. */
  actions: string[];
  /** The final user-visible state. */
  final?: unknown;
  /** CPU time the job took in the child, in milliseconds. */
  cpuMs?: number;
}

export type ChildMessage = ChildReady | ChildFailed | JobResult;

/** Side files in a job chain's work directory. */
export const SIDE_FILES = {
  /** JSON lines: one per node start ({@link ExecEntry}). */
  exec: "exec.log",
  /** JSON lines: put/putWrites issued and resolved ({@link WriteLogEntry}). */
  writes: "writes.log",
  /** JSON lines: every attempt of a guarded side effect, charged or skipped. */
  attempts: "attempts.log",
  /** Directory with one file per idempotency key that was charged. */
  ledger: "ledger",
  /** Where a child writes which command it was killed after, just before the kill. */
  kill: "kill.json",
} as const;

/** One node start. */
export interface ExecEntry {
  w: string;
  node: string;
  step: number;
  /** The enclosing graph's namespace with task ids removed (`""` for the root). */
  ns: string;
  taskId: string;
  path: string;
}

/** One put or putWrites, when it was issued and when it resolved. */
export interface WriteLogEntry {
  w: string;
  event: "writes-issued" | "writes-resolved" | "put-issued" | "put-resolved";
  ns: string;
  checkpointId: string;
  /** `put-*`: the parent checkpoint. */
  parentId?: string;
  /** `writes-*`: the task and the channels written. */
  taskId?: string;
  channels?: string[];
}

/** One attempt of the guarded side effect. */
export interface AttemptEntry {
  w: string;
  node: string;
  key: string;
  charged: boolean;
}

/** Removes task ids from a checkpoint namespace: `sub:<uuid>|inner:<uuid>` → `sub|inner`. */
export function stripTaskIds(ns: string): string {
  return ns
    .split("|")
    .map((part) => part.replace(/:[0-9a-f-]{36}$/, ""))
    .join("|");
}
