/**
 * `resumable-recovery`: what the workers of a database left behind. `list` shows the unfinished
 * (pending, failed), interrupted and dead-lettered threads through the thread-status index; `show`
 * one thread's status and lease; `requeue` puts a dead-lettered thread back for the runner.
 *
 * @module
 */
import { parseCommandLine, processOutput, ResumableError, THREAD_STATES, type CliOutput, type ThreadState, type ThreadStatus } from "@resumable/core";

import { openTarget, type OpenedTarget } from "./open-target.js";

const USAGE = `Usage: resumable-recovery <command> (--db <postgres://...|file.sqlite> [--schema S] | --store <module>) [options]

Commands:
  list               The unfinished (pending, failed), interrupted and dead-lettered threads,
                     oldest activity first, read through the thread-status index.
      --status S,S     states to list: pending, failed, interrupted, dead, done
                       (default: pending,failed,interrupted,dead)
      --older-than D   only threads idle for longer than D (e.g. 30s, 5m, 2h, 1d)
      --limit N        at most N threads per group (default 50)
      --json           one JSON object per line instead of tables
  show <thread>      One thread's status (state, error, interrupts, attempts) and lease.
  requeue <thread>   A dead-lettered (or failed) thread back to pending with its attempts reset,
                     so that a recovery runner resumes it. Claims the thread's lease to do it.

Database:
  --db URL|FILE      a PostgreSQL URL (needs @resumable/postgres) or a SQLite file (@resumable/sqlite)
  --schema S         the PostgreSQL schema (default public)
  --store MODULE     a module whose default export returns a CheckpointStore or a Resumable saver
`;

export type { CliOutput };

const GROUPS: Array<{ title: string; states: ThreadState[] }> = [
  { title: "Unfinished", states: ["pending", "failed"] },
  { title: "Interrupted, waiting for a person", states: ["interrupted"] },
  { title: "Dead-lettered", states: ["dead"] },
  { title: "Done", states: ["done"] },
];

/** Runs the CLI; resolves to the exit code (0 done, 1 failed, 2 usage). */
export async function main(argv: string[], output: CliOutput = processOutput): Promise<number> {
  const args = parseCommandLine(
    argv,
    {
      program: "resumable-recovery",
      usage: USAGE,
      commands: ["list", "show", "requeue"],
      options: {
        db: { type: "string" },
        schema: { type: "string" },
        store: { type: "string" },
        status: { type: "string" },
        "older-than": { type: "string" },
        limit: { type: "string" },
        json: { type: "boolean" },
      },
    },
    output,
  );
  if (typeof args === "number") return args;
  const { command, values, positionals } = args;
  let states: ThreadState[] | undefined;
  let olderThanMs: number | undefined;
  let limit = 50;
  try {
    if (values.status !== undefined) states = parseStates(values.status);
    if (values["older-than"] !== undefined) olderThanMs = parseDuration(values["older-than"]);
    if (values.limit !== undefined) {
      limit = Number(values.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new Error(`--limit must be an integer from 1 to 1000, got ${values.limit}`);
    }
    if (command !== "list" && positionals.length !== 1) throw new Error(`${command} takes one thread id`);
    if (command === "list" && positionals.length > 0) throw new Error(`list takes no thread id (got ${positionals.join(" ")})`);
  } catch (error) {
    output.err(`resumable-recovery ${command}: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  let target: OpenedTarget | undefined;
  try {
    target = await openTarget({ db: values.db, schema: values.schema, store: values.store });
    if (command === "list") return await list(target, output, { states, olderThanMs, limit, json: values.json === true });
    if (command === "show") return await show(target, output, positionals[0]!, values.json === true);
    return await requeue(target, output, positionals[0]!);
  } catch (error) {
    const message = error instanceof ResumableError || error instanceof Error ? error.message : String(error);
    output.err(`resumable-recovery ${command}: ${message}`);
    return 1;
  } finally {
    await target?.close().catch(() => undefined);
  }
}

async function list(target: OpenedTarget, output: CliOutput, options: { states?: ThreadState[]; olderThanMs?: number; limit: number; json: boolean }): Promise<number> {
  const wanted = options.states ?? ["pending", "failed", "interrupted", "dead"];
  const now = Date.now();
  if (!options.json) output.out(`Threads of ${target.label}${options.olderThanMs !== undefined ? `, idle for more than ${formatAge(options.olderThanMs)}` : ""}:`);
  for (const group of GROUPS) {
    const states = group.states.filter((s) => wanted.includes(s));
    if (states.length === 0) continue;
    const page = await target.saver.listThreads({
      status: states,
      limit: options.limit,
      ...(options.olderThanMs !== undefined ? { olderThan: now - options.olderThanMs } : {}),
    });
    if (options.json) {
      for (const thread of page.threads) output.out(JSON.stringify(thread));
      continue;
    }
    const more = page.cursor !== undefined ? ` (the ${options.limit} oldest shown; --limit shows more)` : "";
    output.out(`\n${group.title}${group.states.length > 1 ? ` (${states.join(", ")})` : ""}: ${page.threads.length}${more}`);
    if (page.threads.length === 0) continue;
    output.out(table(["THREAD", "STATE", "IDLE", "ATTEMPTS", "DETAIL"], page.threads.map((t) => [t.threadId, t.state, formatAge(now - t.updatedAt), String(t.attempts), detail(t)])));
  }
  return 0;
}

async function show(target: OpenedTarget, output: CliOutput, threadId: string, json: boolean): Promise<number> {
  const status = await target.saver.getThreadStatus(threadId);
  const lease = target.saver.capabilities.leases ? await target.saver.getLease(threadId) : undefined;
  if (json) {
    output.out(JSON.stringify({ status: status ?? null, lease: lease ?? null }));
    return status ? 0 : 1;
  }
  if (!status) {
    output.err(`Thread ${JSON.stringify(threadId)} has no status in ${target.label} (no root checkpoint since status tracking began, or no such thread).`);
    return 1;
  }
  const now = Date.now();
  output.out(`Thread ${status.threadId}`);
  output.out(`  state:       ${status.state}`);
  output.out(`  checkpoint:  ${status.checkpointId}`);
  output.out(`  activity:    ${new Date(status.updatedAt).toISOString()} (${formatAge(now - status.updatedAt)} ago)`);
  output.out(`  attempts:    ${status.attempts}${status.attemptedAt ? `, the last ${formatAge(now - status.attemptedAt)} ago` : ""}`);
  if (status.error) output.out(`  error:       ${status.error}`);
  for (const interrupt of status.interrupts) output.out(`  interrupt:   ${JSON.stringify(interrupt.value)} (task ${interrupt.taskId})`);
  if (lease) {
    const state = lease.released ? "released" : lease.expiresAt <= now ? `expired ${formatAge(now - lease.expiresAt)} ago` : `held for ${formatAge(lease.expiresAt - now)} more`;
    output.out(`  lease:       token ${lease.token}, ${lease.workerId}, ${state}`);
  } else {
    output.out(`  lease:       never claimed`);
  }
  return 0;
}

async function requeue(target: OpenedTarget, output: CliOutput, threadId: string): Promise<number> {
  const saver = target.saver;
  const status = await saver.getThreadStatus(threadId);
  if (!status) {
    output.err(`Thread ${JSON.stringify(threadId)} has no status in ${target.label}.`);
    return 1;
  }
  if (status.state !== "dead" && status.state !== "failed") {
    output.err(`Thread ${threadId} is ${status.state}; only dead-lettered or failed threads are requeued.`);
    return 1;
  }
  const lease = await saver.claimLease(threadId, { workerId: `resumable-recovery-cli:${process.pid}`, ttlMs: 30_000 });
  if (!lease) {
    output.err(`Thread ${threadId} is leased by another worker right now; try again later.`);
    return 1;
  }
  try {
    const updated = await saver.updateThreadStatus(
      threadId,
      { checkpointId: status.checkpointId, state: "pending", addAttempts: -status.attempts, error: status.error ?? null },
      { lease },
    );
    if (!updated) {
      output.err(`Thread ${threadId} changed meanwhile (its latest checkpoint is no longer ${status.checkpointId}); look at it again.`);
      return 1;
    }
    output.out(`Thread ${threadId} is pending again (attempts reset from ${status.attempts} to 0); a recovery runner will resume it.`);
    return 0;
  } finally {
    await saver.releaseLease(lease);
  }
}

/** A thread's error or interrupt, on one line. */
function detail(thread: ThreadStatus): string {
  const text = thread.error ?? (thread.interrupts.length > 0 ? thread.interrupts.map((i) => JSON.stringify(i.value)).join("; ") : "");
  const line = text.replace(/\s+/g, " ");
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")}`.trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** `1500ms`, `30s`, `5m`, `2h`, `1d` (or a bare number of milliseconds). */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match) throw new Error(`${JSON.stringify(text)} is not a duration; use e.g. 30s, 5m, 2h or 1d`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(match[2] ?? "ms") as "ms"];
  return Math.round(Number(match[1]) * factor);
}

function parseStates(text: string): ThreadState[] {
  const states = text.split(",").map((s) => s.trim()).filter(Boolean) as ThreadState[];
  for (const state of states) {
    if (!THREAD_STATES.includes(state)) throw new Error(`unknown status ${JSON.stringify(state)}; use ${THREAD_STATES.join(", ")}`);
  }
  if (states.length === 0) throw new Error("--status is empty");
  return states;
}

/** A short age: `42s`, `3m12s`, `5h03m`, `2d4h`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}
