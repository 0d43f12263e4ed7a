/**
 * Copies every thread, checkpoint and pending write from one LangGraph.js checkpointer into another
 * through the public `BaseCheckpointSaver` API only, so it works from any saver into any saver: from
 * LangChain's SQLite or PostgreSQL saver into ours, from ours into another store, between two of ours.
 *
 * Channel versions are rewritten, never copied. Savers disagree about them: LangChain's use integers
 * that two branches of a fork share, ours a string unique per write (blobs are keyed by channel and
 * version, so a fork reusing a version would read the other branch's value), and LangGraph compares
 * versions with `<` and `>`, so a thread mixing numbers with strings stops triggering nodes. Every
 * version the target sees comes from `target.getNextVersion`, at a position that keeps the order the
 * source's versions have among themselves (whatever their format: numbers, padded digits, our
 * length-prefixed counters), and one source version maps to one target version within a lineage, so
 * `versions_seen` still points at the `channel_versions` it saw.
 *
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  WRITES_IDX_MAP,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";

import { ResumableError } from "./errors.js";

/** The import could not go on: names the thread, namespace and checkpoint, and the cause. */
export class CheckpointImportError extends ResumableError {
  /** The thread being imported when it failed. */
  readonly threadId: string;
  /** The checkpoint being imported when it failed, if one was. */
  readonly checkpointId: string | undefined;
  constructor(threadId: string, checkpointNs: string, checkpointId: string | undefined, detail: string, options?: { cause?: unknown }) {
    super(
      "IMPORT_FAILED",
      `Importing thread ${JSON.stringify(threadId)}${checkpointNs ? ` (namespace ${JSON.stringify(checkpointNs)})` : ""}` +
        `${checkpointId ? `, checkpoint ${checkpointId}` : ""} failed: ${detail}. Checkpoints imported before it are kept; ` +
        `running the import again skips them and goes on from there.`,
      options,
    );
    this.threadId = threadId;
    this.checkpointId = checkpointId;
  }
}

/** What {@link importCheckpoints} reports after each checkpoint and after each thread. */
export interface ImportProgress {
  /** `"checkpoint"` after each checkpoint, `"thread"` when a thread is done. */
  event: "checkpoint" | "thread";
  threadId: string;
  checkpointNs: string;
  /** Threads finished so far, and how many there are. */
  threadsDone: number;
  threadsTotal: number;
  /** Checkpoints handled so far (new or already there), over every thread. */
  checkpointsDone: number;
  /** Checkpoints of the current thread, over every namespace. */
  threadCheckpoints: number;
  /** Checkpoints written to the target so far. */
  imported: number;
  /** Checkpoints the target already had (a previous import), so far. */
  skipped: number;
  /** `putWrites` calls made so far (one per task and kind of write). */
  writeBatches: number;
}

/** Options of {@link importCheckpoints}. */
export interface ImportCheckpointsOptions {
  /** Import only these threads (default: every thread `source.list({})` returns). */
  threadIds?: string[];
  /** Called after each checkpoint and after each thread, e.g. to print a progress line. */
  onProgress?: (progress: ImportProgress) => void;
}

/** What {@link importCheckpoints} did. */
export interface ImportResult {
  threads: number;
  /** Checkpoints the source holds, over every thread and namespace. */
  checkpoints: number;
  /** Checkpoints written to the target. */
  imported: number;
  /** Checkpoints the target already had, left as they were. */
  skipped: number;
  /** `putWrites` calls made (one per task and kind of write). */
  writeBatches: number;
  durationMs: number;
}

const SPECIAL_CHANNELS = new Set(Object.keys(WRITES_IDX_MAP));
const KEY_SEPARATOR = "\u0000";

/** What a lineage knows once one of its checkpoints is in the target. */
interface Imported {
  /** Source channel_versions of the checkpoint, by channel. */
  sourceVersions: Record<string, unknown>;
  /** `channel + NUL + source version` → target version, for this checkpoint and its ancestors. */
  versions: Map<string, string | number>;
  /** Children not imported yet; the map is dropped once they all are. */
  childrenLeft: number;
}

/**
 * Copies every thread (or `options.threadIds`), with every namespace, checkpoint and pending write,
 * from `source` into `target`, oldest first so that each parent is in place before its children.
 * Running it again changes nothing: a checkpoint the target already has is left as it is (its
 * versions are read back to import its children), and only writes the target lacks are written.
 *
 * @example
 * ```ts
 * import { SqliteSaver as LangChainSqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
 * import { importCheckpoints } from "@resumable/core";
 * import { SqliteSaver } from "@resumable/sqlite";
 *
 * const result = await importCheckpoints(LangChainSqliteSaver.fromConnString("old.sqlite"), await SqliteSaver.connect("new.sqlite"), {
 *   onProgress: (p) => p.event === "thread" && console.log(`${p.threadsDone}/${p.threadsTotal} ${p.threadId}`),
 * });
 * ```
 */
export async function importCheckpoints(
  source: BaseCheckpointSaver,
  target: BaseCheckpointSaver,
  options: ImportCheckpointsOptions = {},
): Promise<ImportResult> {
  if (source === target) throw new TypeError("importCheckpoints(): the source and the target are the same saver.");
  const started = performance.now();
  const threadIds = options.threadIds ?? (await listThreadIds(source));
  const progress: ImportProgress = {
    event: "checkpoint",
    threadId: "",
    checkpointNs: "",
    threadsDone: 0,
    threadsTotal: threadIds.length,
    checkpointsDone: 0,
    threadCheckpoints: 0,
    imported: 0,
    skipped: 0,
    writeBatches: 0,
  };
  for (const threadId of threadIds) {
    const namespaces = new Map<string, CheckpointTuple[]>();
    try {
      for await (const tuple of source.list({ configurable: { thread_id: threadId } })) {
        const ns = String(tuple.config.configurable?.checkpoint_ns ?? "");
        const list = namespaces.get(ns) ?? [];
        list.push(tuple);
        namespaces.set(ns, list);
      }
    } catch (error) {
      throw new CheckpointImportError(threadId, "", undefined, `the source could not list it (${message(error)})`, { cause: error });
    }
    progress.threadId = threadId;
    progress.threadCheckpoints = [...namespaces.values()].reduce((n, list) => n + list.length, 0);
    // The root namespace first, then subgraphs': each namespace is a lineage of its own.
    for (const ns of [...namespaces.keys()].sort()) {
      progress.checkpointNs = ns;
      await importLineage(target, threadId, ns, namespaces.get(ns)!, progress, options.onProgress);
    }
    progress.threadsDone += 1;
    options.onProgress?.({ ...progress, event: "thread" });
  }
  return {
    threads: threadIds.length,
    checkpoints: progress.checkpointsDone,
    imported: progress.imported,
    skipped: progress.skipped,
    writeBatches: progress.writeBatches,
    durationMs: Math.round(performance.now() - started),
  };
}

/** Every thread id the source holds, in first-seen order (`list` is newest first). */
async function listThreadIds(source: BaseCheckpointSaver): Promise<string[]> {
  const seen = new Set<string>();
  for await (const tuple of source.list({ configurable: {} })) {
    const threadId = tuple.config.configurable?.thread_id;
    if (threadId !== undefined && threadId !== null) seen.add(String(threadId));
  }
  return [...seen];
}

/** Orders checkpoints so that every parent present comes before its children (then by id). */
function parentsFirst(tuples: CheckpointTuple[]): CheckpointTuple[] {
  const byId = new Map(tuples.map((t) => [checkpointIdOf(t), t]));
  const ordered: CheckpointTuple[] = [];
  const placed = new Set<string>();
  const place = (tuple: CheckpointTuple, path: Set<string>) => {
    const id = checkpointIdOf(tuple);
    if (placed.has(id) || path.has(id)) return;
    path.add(id);
    const parent = parentIdOf(tuple);
    const parentTuple = parent === undefined ? undefined : byId.get(parent);
    if (parentTuple) place(parentTuple, path);
    placed.add(id);
    ordered.push(tuple);
  };
  for (const tuple of [...tuples].sort((a, b) => (checkpointIdOf(a) < checkpointIdOf(b) ? -1 : 1))) place(tuple, new Set());
  return ordered;
}

async function importLineage(
  target: BaseCheckpointSaver,
  threadId: string,
  ns: string,
  tuples: CheckpointTuple[],
  progress: ImportProgress,
  onProgress: ImportCheckpointsOptions["onProgress"],
): Promise<void> {
  const ordered = parentsFirst(tuples);
  const positions = rankVersions(tuples);
  const children = new Map<string, number>();
  for (const tuple of ordered) {
    const parent = parentIdOf(tuple);
    if (parent !== undefined) children.set(parent, (children.get(parent) ?? 0) + 1);
  }
  const done = new Map<string, Imported>();
  for (const tuple of ordered) {
    const checkpointId = checkpointIdOf(tuple);
    const parentId = parentIdOf(tuple);
    const parent = parentId === undefined ? undefined : done.get(parentId);
    const fail = (detail: string, cause: unknown) => new CheckpointImportError(threadId, ns, checkpointId, `${detail} (${message(cause)})`, { cause });
    const versions = new Map(parent?.versions);
    const mapVersion = (channel: string, version: unknown): string | number => {
      const key = `${channel}${KEY_SEPARATOR}${versionKey(version)}`;
      let mapped = versions.get(key);
      if (mapped === undefined) {
        // Every version of the namespace was ranked up front, so this lookup cannot miss.
        const position = positions.get(versionKey(version))!;
        mapped = target.getNextVersion(position - 1) as string | number;
        versions.set(key, mapped);
      }
      return mapped;
    };

    let existing: CheckpointTuple | undefined;
    try {
      existing = await target.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } });
    } catch (error) {
      throw fail("the target could not be read", error);
    }
    const checkpoint = tuple.checkpoint;
    const sourceVersions = checkpoint.channel_versions ?? {};
    if (existing) {
      // Imported before: learn which target versions it got, so that its children map the same way.
      const pair = (sourceMap: Record<string, unknown>, targetMap: Record<string, unknown> | undefined) => {
        for (const [channel, version] of Object.entries(sourceMap)) {
          const mapped = targetMap?.[channel];
          if (typeof mapped === "string" || typeof mapped === "number") versions.set(`${channel}${KEY_SEPARATOR}${versionKey(version)}`, mapped);
        }
      };
      pair(sourceVersions, existing.checkpoint.channel_versions);
      for (const [node, seen] of Object.entries(checkpoint.versions_seen ?? {})) pair(seen ?? {}, existing.checkpoint.versions_seen?.[node]);
      progress.skipped += 1;
    } else {
      const channelVersions: ChannelVersions = {};
      const newVersions: ChannelVersions = {};
      let copy: Checkpoint;
      try {
        for (const [channel, version] of Object.entries(sourceVersions)) {
          const inherited = parent?.versions.has(`${channel}${KEY_SEPARATOR}${versionKey(version)}`) ?? false;
          const mapped = mapVersion(channel, version);
          channelVersions[channel] = mapped;
          // Unchanged since the parent: the target already holds the value under the mapped version.
          const unchanged = parent !== undefined && inherited && versionKey(parent.sourceVersions[channel]) === versionKey(version);
          if (!unchanged) newVersions[channel] = mapped;
        }
        const versionsSeen: Checkpoint["versions_seen"] = {};
        for (const [node, seen] of Object.entries(checkpoint.versions_seen ?? {})) {
          versionsSeen[node] = {};
          for (const [channel, version] of Object.entries(seen ?? {})) versionsSeen[node][channel] = mapVersion(channel, version);
        }
        copy = { ...checkpoint, channel_versions: channelVersions, versions_seen: versionsSeen };
      } catch (error) {
        if (error instanceof CheckpointImportError) throw error;
        throw fail("its channel versions could not be mapped", error);
      }
      const config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: ns, ...(parentId !== undefined ? { checkpoint_id: parentId } : {}) } };
      try {
        await target.put(config, copy, tuple.metadata ?? ({} as CheckpointMetadata), newVersions);
      } catch (error) {
        throw fail("the target refused the checkpoint", error);
      }
      progress.imported += 1;
    }

    try {
      progress.writeBatches += await importWrites(target, threadId, ns, checkpointId, tuple.pendingWrites ?? [], existing?.pendingWrites ?? []);
    } catch (error) {
      throw fail("the target refused its pending writes", error);
    }

    done.set(checkpointId, { sourceVersions, versions, childrenLeft: children.get(checkpointId) ?? 0 });
    if (parentId !== undefined && parent) {
      parent.childrenLeft -= 1;
      if (parent.childrenLeft <= 0) done.delete(parentId);
    }
    if ((children.get(checkpointId) ?? 0) === 0) done.delete(checkpointId);
    progress.checkpointsDone += 1;
    onProgress?.({ ...progress, event: "checkpoint" });
  }
}

/**
 * Writes a checkpoint's pending writes, one `putWrites` per task and kind: a task's regular writes in
 * their order (so they keep their indexes), then its special ones (interrupt, resume, error), which
 * the target upserts. Skips what the target already holds. Returns the number of calls made.
 */
async function importWrites(
  target: BaseCheckpointSaver,
  threadId: string,
  ns: string,
  checkpointId: string,
  writes: CheckpointTuple["pendingWrites"] & object,
  existing: CheckpointTuple["pendingWrites"] & object,
): Promise<number> {
  const groups = new Map<string, { regular: PendingWrite[]; special: PendingWrite[]; taskPath: string | undefined }>();
  for (const write of writes) {
    const [taskId, channel, value] = write;
    const group = groups.get(taskId) ?? { regular: [], special: [], taskPath: undefined };
    (SPECIAL_CHANNELS.has(channel) ? group.special : group.regular).push([channel, value]);
    // A source that exposes task paths (a 4th element) keeps them; LangChain's savers do not.
    const taskPath = (write as unknown[])[3];
    if (typeof taskPath === "string") group.taskPath = taskPath;
    groups.set(taskId, group);
  }
  const have = new Map<string, { regular: number; special: string[] }>();
  for (const [taskId, channel] of existing) {
    const entry = have.get(taskId) ?? { regular: 0, special: [] };
    if (SPECIAL_CHANNELS.has(channel)) entry.special.push(channel);
    else entry.regular += 1;
    have.set(taskId, entry);
  }
  const config = { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } };
  let calls = 0;
  for (const [taskId, group] of groups) {
    const held = have.get(taskId);
    if (group.regular.length > 0 && (held?.regular ?? 0) < group.regular.length) {
      await target.putWrites(config, group.regular, taskId, group.taskPath);
      calls += 1;
    }
    const specialChannels = group.special.map(([channel]) => channel).sort();
    if (group.special.length > 0 && JSON.stringify(specialChannels) !== JSON.stringify([...(held?.special ?? [])].sort())) {
      await target.putWrites(config, group.special, taskId, group.taskPath);
      calls += 1;
    }
  }
  return calls;
}

/**
 * The order position of every channel version a namespace's checkpoints hold (in `channel_versions`
 * and `versions_seen`), by {@link versionKey}: 1 for the smallest, equal versions sharing one. The
 * order is the one LangGraph applies to them: numbers by value, strings as strings (it compares with
 * `<` and `>`). Only the order matters to LangGraph, so the positions need not be the source's
 * counters, and no format has to be parsed.
 */
function rankVersions(tuples: CheckpointTuple[]): Map<string, number> {
  const distinct = new Map<string, unknown>();
  const add = (version: unknown) => {
    if (version !== undefined && version !== null) distinct.set(versionKey(version), version);
  };
  for (const { checkpoint } of tuples) {
    for (const version of Object.values(checkpoint.channel_versions ?? {})) add(version);
    for (const seen of Object.values(checkpoint.versions_seen ?? {})) for (const version of Object.values(seen ?? {})) add(version);
  }
  const sorted = [...distinct].sort(([, a], [, b]) => compareVersions(a, b));
  const positions = new Map<string, number>();
  let position = 0;
  let previous: unknown;
  for (const [key, version] of sorted) {
    if (position === 0 || compareVersions(previous, version) !== 0) position += 1;
    positions.set(key, position);
    previous = version;
  }
  return positions;
}

/** LangGraph's order of channel versions: numbers by value, anything else as strings. */
function compareVersions(a: unknown, b: unknown): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** A version as a map key that keeps `5` and `"5"` apart. */
function versionKey(version: unknown): string {
  return `${typeof version}:${String(version)}`;
}

function checkpointIdOf(tuple: CheckpointTuple): string {
  return String(tuple.config.configurable?.checkpoint_id ?? tuple.checkpoint.id);
}

function parentIdOf(tuple: CheckpointTuple): string | undefined {
  const id: unknown = tuple.parentConfig?.configurable?.checkpoint_id;
  return typeof id === "string" && id !== "" ? id : undefined;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** One line about an import in progress, e.g. for a CLI: `thread 2/3 "order-42": 14 checkpoints (14 new)`. */
export function formatImportProgress(progress: ImportProgress): string {
  return (
    `thread ${progress.threadsDone}/${progress.threadsTotal} ${JSON.stringify(progress.threadId)}: ` +
    `${progress.threadCheckpoints} checkpoint${progress.threadCheckpoints === 1 ? "" : "s"}; ` +
    `${progress.imported} imported, ${progress.skipped} already there so far`
  );
}

/** The summary of an import, e.g. `imported 3 threads: 12 new checkpoints, 0 already there, 7 write batches, in 0.4 s`. */
export function formatImportResult(result: ImportResult): string {
  return (
    `imported ${result.threads} thread${result.threads === 1 ? "" : "s"}: ${result.imported} new checkpoint${result.imported === 1 ? "" : "s"}, ` +
    `${result.skipped} already there, ${result.writeBatches} write batch${result.writeBatches === 1 ? "" : "es"}, in ${(result.durationMs / 1000).toFixed(1)} s`
  );
}
