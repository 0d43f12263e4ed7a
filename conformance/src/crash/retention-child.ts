/**
 * The retention crash sweep's child process: builds a template thread, prunes or copies a thread with
 * a kill after its k-th database command, and checks what a killed one left (see `retention-sweep.ts`).
 *
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import * as core from "@resumable/core";
import { ResumableSaver, checkpointKey, planRetention, type CheckpointStore } from "@resumable/core";

import { chatTurns, everyTuple, mixedChatGraph, stateAt, tupleView } from "../retention-fixtures.js";
import type { ChildMessage } from "./protocol.js";

/** Which operation a job of the sweep runs. */
export type RetentionOperation = "prune" | "copy";

/** A job of the sweep, sent by the parent. */
export interface RetentionJob {
  type: "job";
  id: number;
  /**
   * `prepare`: build the template thread, record what it reads and what an uncrashed prune keeps, and
   * count each operation's commands. `crash`: run the operation with a kill after command `k`.
   * `verify`: check what a killed operation left, run it again, and check the result.
   */
  phase: "prepare" | "crash" | "verify";
  operation: RetentionOperation;
  workDir: string;
  /** The thread every job starts from (a copy of it, for prune). */
  template: string;
  /** The thread the operation works on: the pruned copy, or the copy's target. */
  target: string;
  k?: number;
  turns: number;
  keepLast: number;
}

/** The answer to a job. */
export interface RetentionJobResult {
  type: "result";
  id: number;
  error?: string;
  /** `prepare`: the command names of an uncrashed prune and copy. */
  names?: Record<RetentionOperation, string[]>;
  /** `crash`: commands counted when the operation finished without reaching `k`. */
  commands?: number;
  /** `verify`: what is wrong, one sentence each; empty when everything held. */
  problems?: string[];
}

/** The template's views and the kept set of an uncrashed prune, as `prepare` writes them. */
interface Expected {
  /** By `ns\0id`: the tuple (without its thread id) and, for root checkpoints, the graph state. */
  views: Record<string, unknown>;
  /** Keys an uncrashed prune keeps. */
  kept: string[];
}

const EXPECTED_FILE = "retention-expected.json";

function send(message: ChildMessage | RetentionJobResult): void {
  process.send?.(message);
}

async function openStore(factory: (context: { workDir: string }) => unknown, workDir: string): Promise<{ store: CheckpointStore; saver: ResumableSaver }> {
  const target = (await factory({ workDir })) as CheckpointStore;
  if (typeof target?.putCheckpoint !== "function") throw new TypeError("the retention crash sweep needs a factory that returns a CheckpointStore");
  const saver = new ResumableSaver(target);
  await saver.setup();
  return { store: target, saver };
}

/** A JSON round trip, so that views computed now compare with views read back from a file. */
function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}

/** What a user reads of every checkpoint of a thread, keyed `ns\0id`, without the thread id. */
async function views(saver: ResumableSaver, threadId: string): Promise<Record<string, unknown>> {
  const graph = mixedChatGraph(saver);
  const out: Record<string, unknown> = {};
  for (const [key, tuple] of await everyTuple(saver, threadId)) {
    const { thread: _thread, ...view } = tupleView(tuple) as { thread: unknown };
    const ns = tuple.config.configurable?.checkpoint_ns ?? "";
    out[key] = plain({ view, ...(ns === "" ? { state: await stateAt(graph, threadId, tuple.checkpoint.id) } : {}) });
  }
  return out;
}

/** Calls `onCommand` after each command the store reports (or each store call, when it reports none). */
function instrument(store: CheckpointStore, onCommand: (name: string) => void): void {
  const capabilities = { ...core.DEFAULT_CAPABILITIES, ...store.capabilities };
  if (capabilities.commandEvents && typeof store.instrument === "function") {
    store.instrument((event) => onCommand(event.command));
    return;
  }
  const record = store as unknown as Record<string, unknown>;
  for (const name of ["putCheckpoint", "putWrites", "getCheckpoint", "getChunks", "getBlobs", "getThreadStatus", "listThreadRecords", "deleteRecords"]) {
    const original = record[name];
    if (typeof original !== "function") continue;
    record[name] = async (...args: unknown[]) => {
      const result: unknown = await (original as (...a: unknown[]) => unknown).apply(store, args);
      onCommand(name);
      return result;
    };
  }
  const list = record["listCheckpoints"] as ((...a: unknown[]) => AsyncIterable<unknown>) | undefined;
  if (typeof list === "function") {
    record["listCheckpoints"] = async function* (...args: unknown[]) {
      yield* list.apply(store, args);
      onCommand("listCheckpoints");
    };
  }
}

async function operate(saver: ResumableSaver, job: RetentionJob): Promise<void> {
  if (job.operation === "prune") await saver.prune([job.target], { keepLast: job.keepLast });
  else await saver.copyThread(job.template, job.target);
}

async function prepare(saver: ResumableSaver, store: CheckpointStore, job: RetentionJob): Promise<RetentionJobResult> {
  await chatTurns(mixedChatGraph(saver), job.template, 0, job.turns);
  const names: Record<RetentionOperation, string[]> = { prune: [], copy: [] };
  let sink: string[] | undefined;
  instrument(store, (name) => sink?.push(name));
  for (const operation of ["prune", "copy"] as const) {
    const target = `${job.template}-baseline-${operation}`;
    if (operation === "prune") await saver.copyThread(job.template, target);
    sink = names[operation];
    await operate(saver, { ...job, operation, target });
    sink = undefined;
  }
  const pruned = await views(saver, `${job.template}-baseline-prune`);
  const expected: Expected = { views: await views(saver, job.template), kept: Object.keys(pruned) };
  if (expected.kept.length >= Object.keys(expected.views).length) throw new Error(`the uncrashed prune({ keepLast: ${job.keepLast} }) removed nothing: the sweep would prove nothing`);
  writeFileSync(join(job.workDir, EXPECTED_FILE), JSON.stringify(expected));
  return { type: "result", id: job.id, names };
}

async function crash(saver: ResumableSaver, store: CheckpointStore, job: RetentionJob): Promise<RetentionJobResult> {
  if (job.operation === "prune") await saver.copyThread(job.template, job.target);
  let count = 0;
  instrument(store, () => {
    count += 1;
    if (count === job.k) {
      process.kill(process.pid, "SIGKILL");
      // SIGKILL is not delivered synchronously everywhere; never let the operation go on meanwhile.
      for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  });
  await operate(saver, job);
  return { type: "result", id: job.id, commands: count };
}

async function verify(saver: ResumableSaver, store: CheckpointStore, job: RetentionJob): Promise<RetentionJobResult> {
  const expected = JSON.parse(readFileSync(join(job.workDir, EXPECTED_FILE), "utf8")) as Expected;
  const problems: string[] = [];
  const show = (key: string) => JSON.stringify(key.replace("\u0000", " "));
  const compare = (found: Record<string, unknown>, when: string) => {
    for (const [key, view] of Object.entries(found)) {
      if (!(key in expected.views)) problems.push(`${when}: checkpoint ${show(key)} is not one of the template's`);
      else if (!isDeepStrictEqual(view, expected.views[key])) problems.push(`${when}: checkpoint ${show(key)} reads differently from the template's`);
    }
  };
  const left = await views(saver, job.target);
  compare(left, "after the kill");
  const mustHave = job.operation === "prune" ? expected.kept : [];
  for (const key of mustHave) if (!(key in left)) problems.push(`after the kill: checkpoint ${show(key)}, which prune keeps, is gone`);
  // Run it again, as a user would after the crash: it must complete the job.
  await operate(saver, job);
  const done = await views(saver, job.target);
  compare(done, "after running it again");
  const wanted = job.operation === "prune" ? expected.kept : Object.keys(expected.views);
  const missing = wanted.filter((key) => !(key in done));
  const extra = Object.keys(done).filter((key) => !wanted.includes(key));
  if (missing.length > 0 || extra.length > 0) {
    problems.push(`after running it again: ${missing.length} checkpoint(s) missing and ${extra.length} extra, against an uncrashed ${job.operation}`);
  }
  if (store.listThreadRecords) {
    const records = await store.listThreadRecords(job.target);
    const all = new Set(records.checkpoints.map((r) => checkpointKey(r.checkpointNs, r.checkpointId)));
    const { request } = planRetention(records, all, new Map());
    const orphans = request.blobs.length + request.chunks.length + request.checkpoints.length;
    if (orphans > 0) problems.push(`after running it again: ${orphans} record(s) no checkpoint reads remain (orphans)`);
  }
  return { type: "result", id: job.id, problems };
}

/**
 * The child's main loop, called by the generated entry module with the factory's default export.
 *
 * @internal
 */
export async function retentionChildMain(factoryExport: unknown): Promise<void> {
  process.on("disconnect", () => process.exit(0));
  const create = (factoryExport as { create?: unknown } | undefined)?.create;
  const factory = (typeof factoryExport === "function" ? factoryExport : typeof create === "function" ? create.bind(factoryExport) : undefined) as
    | ((context: { workDir: string }) => unknown)
    | undefined;
  if (factory === undefined) {
    send({ type: "failed", error: `the factory module's default export is ${typeof factoryExport}, not a function returning a store` });
    return;
  }
  let queue = Promise.resolve();
  process.on("message", (job: RetentionJob) => {
    if (job?.type !== "job") return;
    queue = queue.then(async () => {
      let opened: { store: CheckpointStore; saver: ResumableSaver } | undefined;
      try {
        opened = await openStore(factory, job.workDir);
        const { saver, store } = opened;
        send(job.phase === "prepare" ? await prepare(saver, store, job) : job.phase === "crash" ? await crash(saver, store, job) : await verify(saver, store, job));
      } catch (error) {
        send({ type: "result", id: job.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
      } finally {
        opened?.store.instrument?.(undefined);
        await opened?.saver.close().catch(() => undefined);
      }
    });
  });
  const startup = process.cpuUsage();
  send({ type: "ready", pid: process.pid, startCpuMs: Math.round((startup.user + startup.system) / 1000), kind: "store", name: "", persistent: true, counting: "database commands" });
}
