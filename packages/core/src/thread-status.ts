/**
 * Thread status: what the saver can tell about a thread from the checkpoints and writes LangGraph.js
 * hands it, without the graph.
 *
 * LangGraph.js 1.7 decides what runs next from the checkpoint alone (`_prepareNextTasks`): a queued
 * `Send` in `channel_values.__pregel_tasks`, or a node whose trigger channel is available and has a
 * version greater than the one the node last saw (`versions_seen[node][channel]`). The saver receives
 * every current channel value on `put`, so it can apply the same rule, knowing only how StateGraph
 * and the functional API name their trigger channels:
 *
 * - `__start__` (the input, consumed by StateGraph's `__start__` node or an entrypoint);
 * - `branch:to:<node>` (every edge, conditional edge and `Command({ goto })` into `<node>`; an
 *   `EphemeralValue`, present in `channel_values` only until consumed, or a `[value, finished]` pair
 *   for a deferred node);
 * - `join:<a>+<b>:<node>` (an edge from several nodes; available once every start node wrote it);
 * - any channel a node has already seen as a trigger (custom `Pregel` graphs).
 *
 * Failures and interrupts arrive as writes on the checkpoint: `__error__` (a task failed),
 * `__interrupt__` (a task called `interrupt()`; a subgraph's interrupt is written on the parent's
 * checkpoint by the parent task too), `__resume__` (a `Command({ resume })` answered it).
 *
 * Limits (documented in the README): a graph compiled with `interruptBefore`/`interruptAfter` stops
 * at a checkpoint that still has tasks and writes nothing, so it looks `"pending"` (the recovery
 * runner checks `interruptBefore` against the graph itself); a custom `Pregel` trigger channel that
 * no node has seen yet is not recognised; an `AbortError` (a sibling of a failed task, or a run
 * aborted by its caller) does not mark a thread failed.
 *
 * @module
 */
import { ERROR, INTERRUPT, RESUME, TASKS, type Checkpoint, type PendingWrite } from "@langchain/langgraph-checkpoint";

import { InvalidConfigError } from "./errors.js";
import { THREAD_STATES, type ThreadState, type ThreadStatusPatch, type ThreadStatusRecord, type ThreadStatusWrite } from "./store.js";

/** The longest error message a status keeps. */
export const MAX_STATUS_ERROR_CHARS = 4000;
/**
 * How far a thread's `updatedAt` may trail its last root checkpoint by default (ms): within it, a put
 * that leaves the state as it was leaves `updatedAt` too (see `ThreadStatusWrite.keepUpdatedAtFrom`).
 */
export const DEFAULT_STATUS_RESOLUTION_MS = 1000;
/** The largest interrupt value (as JSON) a status keeps whole; larger ones are kept as a preview. */
export const MAX_INTERRUPT_JSON_CHARS = 8192;

const START = "__start__";
/** versions_seen keys that are not nodes. */
const NOT_NODES = new Set(["__interrupt__", "__input__"]);

/** A thread's status, as the saver returns it. */
export interface ThreadStatus {
  threadId: string;
  /** See {@link ThreadState}. */
  state: ThreadState;
  /** The latest root checkpoint the status describes. */
  checkpointId: string;
  /** Last activity, ms since the epoch. */
  updatedAt: number;
  /** For `"failed"` and `"dead"`: the last error's message. */
  error?: string;
  /** For `"interrupted"`: the pending interrupts (`value` is what `interrupt()` was given, as JSON). */
  interrupts: Array<{ taskId: string; id?: string; value: unknown }>;
  /** Resumes started by a recovery runner since the checkpoint was written. */
  attempts: number;
  /** When the last attempt started, ms since the epoch. */
  attemptedAt?: number;
}

/** One page of {@link ResumableSaver.listThreads}. */
export interface ThreadPage {
  threads: ThreadStatus[];
  /** Pass it back as `cursor` for the next page; absent on the last page. */
  cursor?: string;
}

/** Options of `listThreads`. */
export interface ListThreadsOptions {
  /** Only threads in this state (or these states). Default: every state. */
  status?: ThreadState | readonly ThreadState[];
  /** Only threads whose last activity is older than this (a `Date`, or ms since the epoch). */
  olderThan?: Date | number;
  /** Threads per page, 1 to 1000. Default 100. */
  limit?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
}

/** The most threads one `listThreads` page returns. */
export const MAX_THREADS_PAGE = 1000;

/**
 * Whether a checkpoint has tasks to run next, by the rule LangGraph.js applies when it loads it
 * (see the module comment). Exported for tests and for stores that want to check a status.
 */
export function hasPendingTasks(checkpoint: Pick<Checkpoint, "channel_values" | "channel_versions" | "versions_seen">): boolean {
  const values = (checkpoint.channel_values ?? {}) as Record<string, unknown>;
  const versions = (checkpoint.channel_versions ?? {}) as Record<string, number | string>;
  const seen = (checkpoint.versions_seen ?? {}) as Record<string, Record<string, number | string> | undefined>;
  const sends = own(values, TASKS) ? values[TASKS] : undefined;
  if (Array.isArray(sends) && sends.length > 0) return true;
  for (const channel of Object.keys(versions)) {
    // A trigger channel without a value is not available (EphemeralValue, consumed).
    if (!own(values, channel)) continue;
    const version = versions[channel]!;
    const value = values[channel];
    if (channel === START) {
      // Nothing has consumed this input yet (StateGraph's __start__ node, or an entrypoint).
      if (Object.entries(seen).every(([node, s]) => NOT_NODES.has(node) || s === undefined || !own(s, channel) || newer(version, s[channel]))) return true;
      continue;
    }
    if (channel.startsWith("branch:to:")) {
      if (isDeferred(value) && value[1] !== true) continue;
      if (newer(version, seenBy(seen, channel.slice("branch:to:".length), channel))) return true;
      continue;
    }
    if (channel.startsWith("join:")) {
      const end = channel.lastIndexOf(":");
      if (end <= "join:".length) continue;
      let names = value;
      if (isDeferred(value)) {
        if (value[1] !== true) continue;
        names = value[0];
      }
      if (!barrierFull(channel.slice("join:".length, end), names)) continue;
      if (newer(version, seenBy(seen, channel.slice(end + 1), channel))) return true;
    }
  }
  // Triggers that a node has seen before (custom Pregel graphs with persistent trigger channels).
  for (const [node, channels] of Object.entries(seen)) {
    if (NOT_NODES.has(node) || channels === undefined) continue;
    for (const [channel, at] of Object.entries(channels)) {
      if (channel === START || channel.startsWith("branch:to:") || channel.startsWith("join:")) continue;
      if (own(values, channel) && own(versions, channel) && newer(versions[channel]!, at)) return true;
    }
  }
  return false;
}

/** The base status of a root checkpoint: `"pending"` when it has tasks to run, else `"done"`. */
export function checkpointState(checkpoint: Pick<Checkpoint, "channel_values" | "channel_versions" | "versions_seen">): "pending" | "done" {
  return hasPendingTasks(checkpoint) ? "pending" : "done";
}

/**
 * The status change a batch of writes on a root checkpoint makes, or `undefined` when it makes none
 * (ordinary writes, or only an `AbortError`). `updatedAt` is the time of the call.
 */
export function statusPatchOfWrites(writes: PendingWrite[], taskId: string, checkpointId: string, updatedAt: number): ThreadStatusPatch | undefined {
  let patch: ThreadStatusPatch | undefined;
  for (const [channel, value] of writes) {
    if (channel === ERROR) {
      const message = errorMessage(value);
      if (message !== undefined) patch = { checkpointId, state: "failed", error: message, updatedAt };
    } else if (channel === INTERRUPT) {
      patch = { checkpointId, state: "interrupted", interrupts: { [taskId]: interruptList(value) }, error: null, updatedAt };
    } else if (channel === RESUME && patch === undefined) {
      // An answer: the interrupted tasks run again (they interrupt again if they need more).
      patch = { checkpointId, state: "pending", interrupts: null, updatedAt };
    }
  }
  return patch;
}

/** Applies a patch to a status write that has not reached the store yet (see the saver's notes). */
export function applyPatchToWrite(write: ThreadStatusWrite, patch: ThreadStatusPatch): ThreadStatusWrite {
  const out: ThreadStatusWrite = { ...write, updatedAt: Math.max(write.updatedAt, patch.updatedAt) };
  if (patch.state !== undefined && patch.state !== "dead") out.state = patch.state;
  if (patch.error === null) delete out.error;
  else if (patch.error !== undefined) out.error = patch.error;
  if (patch.interrupts === null) delete out.interrupts;
  else if (patch.interrupts !== undefined) {
    const merged = mergeInterrupts(out.interrupts, patch.interrupts);
    if (merged === undefined) delete out.interrupts;
    else out.interrupts = merged;
  }
  return out;
}

/**
 * Applies a patch to a stored record (the reference semantics every store implements): `undefined`
 * when the record describes another checkpoint.
 */
export function applyPatchToRecord(record: ThreadStatusRecord, patch: ThreadStatusPatch): ThreadStatusRecord | undefined {
  if (record.checkpointId !== patch.checkpointId) return undefined;
  const out: ThreadStatusRecord = { ...record, updatedAt: patch.updatedAt };
  if (patch.state !== undefined) out.state = patch.state;
  if (patch.error === null) delete out.error;
  else if (patch.error !== undefined) out.error = patch.error;
  if (patch.interrupts === null) delete out.interrupts;
  else if (patch.interrupts !== undefined) {
    const merged = mergeInterrupts(out.interrupts, patch.interrupts);
    if (merged === undefined) delete out.interrupts;
    else out.interrupts = merged;
  }
  if (patch.addAttempts !== undefined) out.attempts = record.attempts + patch.addAttempts;
  if (patch.attemptedAt !== undefined) out.attemptedAt = patch.attemptedAt;
  return out;
}

/** The record a put's status write leaves (see {@link ThreadStatusWrite}): `undefined` keeps `current`. */
export function recordOfWrite(threadId: string, checkpointId: string, write: ThreadStatusWrite, current: ThreadStatusRecord | undefined): ThreadStatusRecord | undefined {
  if (current !== undefined && current.checkpointId > checkpointId) return undefined;
  const record: ThreadStatusRecord = { threadId, state: write.state, checkpointId, updatedAt: write.updatedAt, attempts: 0 };
  if (write.error !== undefined) record.error = write.error;
  if (write.interrupts !== undefined && Object.keys(write.interrupts).length > 0) record.interrupts = write.interrupts;
  return record;
}

/** JSON merge patch of interrupts by task id; `undefined` when nothing is left. */
export function mergeInterrupts(current: Record<string, unknown> | undefined, patch: Record<string, unknown>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { ...(current ?? {}) };
  for (const [task, value] of Object.entries(patch)) {
    if (value === null) delete out[task];
    else Object.defineProperty(out, task, { value, enumerable: true, writable: true, configurable: true });
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A stored record as the saver returns it. */
export function toThreadStatus(record: ThreadStatusRecord): ThreadStatus {
  const interrupts: ThreadStatus["interrupts"] = [];
  for (const [taskId, list] of Object.entries(record.interrupts ?? {})) {
    for (const item of Array.isArray(list) ? list : [list]) {
      const entry: { id?: unknown; value?: unknown } = item !== null && typeof item === "object" ? (item as { id?: unknown; value?: unknown }) : { value: item };
      interrupts.push({ taskId, ...(typeof entry.id === "string" ? { id: entry.id } : {}), value: entry.value });
    }
  }
  const status: ThreadStatus = {
    threadId: record.threadId,
    state: record.state,
    checkpointId: record.checkpointId,
    updatedAt: record.updatedAt,
    interrupts,
    attempts: record.attempts,
  };
  if (record.error !== undefined) status.error = record.error;
  if (record.attemptedAt !== undefined) status.attemptedAt = record.attemptedAt;
  return status;
}

/** The states a `status` option names, checked. */
export function statesOf(status: ListThreadsOptions["status"]): ThreadState[] | undefined {
  if (status === undefined) return undefined;
  const list = (Array.isArray(status) ? status : [status]) as ThreadState[];
  if (list.length === 0) throw new InvalidConfigError("status", `listThreads(): "status" is an empty list; leave it out to list every state.`);
  for (const state of list) {
    if (!THREAD_STATES.includes(state)) {
      throw new InvalidConfigError("status", `listThreads(): unknown status ${JSON.stringify(state)}; use one of ${THREAD_STATES.join(", ")}.`);
    }
  }
  return [...new Set(list)];
}

/** An opaque cursor for the position after `record`. */
export function encodeCursor(record: Pick<ThreadStatusRecord, "updatedAt" | "threadId">): string {
  return Buffer.from(JSON.stringify([record.updatedAt, record.threadId]), "utf8").toString("base64url");
}

/** The position a cursor names; throws a clear error for anything not made by {@link encodeCursor}. */
export function decodeCursor(cursor: string): { updatedAt: number; threadId: string } {
  try {
    const [updatedAt, threadId] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [unknown, unknown];
    if (typeof updatedAt === "number" && Number.isFinite(updatedAt) && typeof threadId === "string") return { updatedAt, threadId };
  } catch {
    // reported below
  }
  throw new InvalidConfigError("cursor", `listThreads(): "cursor" is not a cursor returned by listThreads (got ${JSON.stringify(cursor.slice(0, 40))}).`);
}

/** The message of an `__error__` write's value; `undefined` for an abort, which says nothing of the task. */
export function errorMessage(value: unknown): string | undefined {
  let name: string | undefined;
  let message: string;
  if (value !== null && typeof value === "object") {
    const v = value as { name?: unknown; message?: unknown };
    name = typeof v.name === "string" ? v.name : undefined;
    message = typeof v.message === "string" ? v.message : safeJson(value) ?? String(value);
  } else {
    message = String(value);
  }
  if (name === "AbortError") return undefined;
  const text = name && name !== "Error" ? `${name}: ${message}` : message;
  return text.length > MAX_STATUS_ERROR_CHARS ? `${text.slice(0, MAX_STATUS_ERROR_CHARS - 1)}…` : text;
}

/** An `__interrupt__` write's value (a list of `Interrupt`s) as plain JSON `{ id, value }` items. */
function interruptList(value: unknown): unknown[] {
  const items = Array.isArray(value) ? value : [value];
  return items.map((item) => {
    if (item !== null && typeof item === "object" && "value" in item) {
      const { id, value: inner } = item as { id?: unknown; value: unknown };
      return typeof id === "string" ? { id, value: plainJson(inner) } : { value: plainJson(inner) };
    }
    return { value: plainJson(item) };
  });
}

/**
 * A value as plain JSON for a status record: what `JSON.stringify` keeps; a value that cannot be
 * stringified becomes `{ unserializable: String(value) }`, and one larger than
 * {@link MAX_INTERRUPT_JSON_CHARS} becomes `{ truncated: true, preview }` (the checkpoint's own
 * writes keep the whole value; `graph.getState()` returns it).
 */
export function plainJson(value: unknown): unknown {
  const text = safeJson(value);
  if (text === undefined) return value === undefined ? null : { unserializable: String(value) };
  if (text.length > MAX_INTERRUPT_JSON_CHARS) return { truncated: true, preview: text.slice(0, 1024) };
  return JSON.parse(text) as unknown;
}

function safeJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

function own(record: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(record, key);
}

function seenBy(seen: Record<string, Record<string, number | string> | undefined>, node: string, channel: string): number | string | undefined {
  const channels = own(seen, node) ? seen[node] : undefined;
  return channels && own(channels, channel) ? channels[channel] : undefined;
}

/** LangGraph's comparison: a channel is newer than what a node saw (never seen: any version is newer). */
function newer(version: number | string, seen: number | string | undefined): boolean {
  if (seen === undefined || seen === null) return true;
  return version > seen;
}

function isDeferred(value: unknown): value is [unknown, boolean] {
  return Array.isArray(value) && value.length === 2 && typeof value[1] === "boolean";
}

/** A join barrier is full when the names it saw are exactly the start nodes its channel name lists. */
function barrierFull(starts: string, names: unknown): boolean {
  if (!Array.isArray(names) || names.length === 0 || !names.every((n) => typeof n === "string")) return false;
  const unique = [...new Set(names as string[])];
  const parts = starts.split("+");
  if (parts.length === unique.length && unique.every((n) => parts.includes(n))) return true;
  // Node names may contain "+": the seen names, joined, must then spell the list exactly.
  return unique.reduce((n, name) => n + name.length, 0) + unique.length - 1 === starts.length && unique.every((n) => starts.includes(n));
}
