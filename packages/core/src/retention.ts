/**
 * Retention: which records of a thread stay when only some of its checkpoints are kept.
 *
 * A kept checkpoint reads more than its own record. Its blobs at its channel versions, and for a blob
 * stored as a delta the whole chain of bases back to a whole value. The shared pieces and chunks its
 * values (and its pending writes) reference. For a LangGraph `DeltaChannel` that has no snapshot in the
 * checkpoint, the runtime rebuilds the value from the writes of its ancestors back to the nearest one
 * that holds a snapshot (`getDeltaChannelHistory`): those ancestors stay too, and since they stay as
 * readable checkpoints, whatever they read stays, transitively. A checkpoint of format `v < 4` reads
 * its parent's pending sends. Everything else goes: checkpoints with their writes, and blobs and chunks
 * that nothing kept references (orphans of earlier crashes included).
 *
 * Which checkpoint's `DeltaChannel` needs its ancestors is read from the records alone, as the runtime
 * leaves it: the channel has a version whose blob holds no value, and the checkpoint's metadata counts
 * the channel in `counters_since_delta_snapshot` (LangGraph writes a count there for every delta
 * channel that was not snapshotted at that checkpoint). An ephemeral channel that was cleared also has
 * a version and no value, but no count: it needs nothing, and its ancestors may go.
 *
 * Everything here is pure: the saver lists a thread's records, asks {@link planRetention} what to remove,
 * and hands the answer to the store.
 *
 * @module
 */
import { filterableMetadata } from "./metadata-form.js";
import type { BlobKey, CheckpointRecord, DeleteRecordsRequest, SerializedValue, ThreadRecords, WriteKey } from "./store.js";

/** What {@link ResumableSaver.prune} and {@link ResumableSaver.deleteForRuns} removed. */
export interface RetentionResult {
  /** Threads looked at. */
  threads: number;
  /** Checkpoints removed, in every namespace. */
  checkpoints: number;
  /** Pending writes removed (those of removed checkpoints, and writes left without a checkpoint by a crash). */
  writes: number;
  /** Channel blobs removed (values no kept checkpoint reads). */
  blobs: number;
  /** Chunks and shared pieces removed (each index of each hash counts once). */
  chunks: number;
  /**
   * Bytes of the values removed: the serialized checkpoints and metadata of removed records, and the
   * inline bytes of removed blobs, writes and chunks. How much disk the database gives back, and
   * when, is its own business (SQLite reuses freed pages; PostgreSQL after a vacuum).
   */
  bytes: number;
  /**
   * Checkpoints that the selection would have removed but that stay because a kept checkpoint reads
   * them: the ancestors back to a `DeltaChannel`'s snapshot, or the parent of a format `v < 4`
   * checkpoint.
   */
  keptForHistory: number;
}

/** What core read from each checkpoint's serialized value, by {@link checkpointKey}. */
export interface CheckpointFacts {
  /** The checkpoint's `ts`, in ms since the epoch, when it parses. */
  ts: number | undefined;
  /** The checkpoint's format version `v`. */
  v: number | undefined;
}

/** What {@link planRetention} decided for one thread. */
export interface RetentionPlan {
  /** Keys ({@link checkpointKey}) of the checkpoints that stay. */
  kept: Set<string>;
  /** What to remove; empty lists when nothing goes. */
  request: Omit<DeleteRecordsRequest, "threadId" | "fence" | "status">;
  /** The counts and bytes of `request`, with `threads: 1`. */
  result: RetentionResult;
}

/** The key of a checkpoint across namespaces. */
export function checkpointKey(checkpointNs: string, checkpointId: string): string {
  return `${checkpointNs}\u0000${checkpointId}`;
}

/** An empty result. */
export function emptyRetentionResult(): RetentionResult {
  return { threads: 0, checkpoints: 0, writes: 0, blobs: 0, chunks: 0, bytes: 0, keptForHistory: 0 };
}

/** Adds `b` into `a`. */
export function addRetentionResults(a: RetentionResult, b: RetentionResult): RetentionResult {
  return {
    threads: a.threads + b.threads,
    checkpoints: a.checkpoints + b.checkpoints,
    writes: a.writes + b.writes,
    blobs: a.blobs + b.blobs,
    chunks: a.chunks + b.chunks,
    bytes: a.bytes + b.bytes,
    keptForHistory: a.keptForHistory + b.keptForHistory,
  };
}

/** The rule {@link selectForPrune} applies. */
export interface PruneSelection {
  /** Keep the newest this many root checkpoints (and the subgraph checkpoints that belong to them). */
  keepLast?: number;
  /** Remove checkpoints whose `ts` is before this time, in ms since the epoch. */
  olderThan?: number;
}

/**
 * The checkpoints a prune keeps before history is added (see {@link planRetention}).
 *
 * Root checkpoints (namespace `""`): the newest `keepLast`, without those older than `olderThan`; the
 * newest root checkpoint always stays, so a thread never disappears through a prune (delete it with
 * `deleteThread`, or give it a TTL). A checkpoint of a subgraph namespace that names its root
 * checkpoint (`metadata.parents[""]`, as LangGraph writes it) stays when that root checkpoint does, or
 * when it names one newer than the oldest kept root checkpoint (a root checkpoint that durability
 * `"exit"` never wrote): a subgraph's state goes with the step it belongs to. One that names none is
 * judged within its own namespace, as root checkpoints are.
 */
export function selectForPrune(records: ThreadRecords, facts: Map<string, CheckpointFacts>, selection: PruneSelection): Set<string> {
  const keep = new Set<string>();
  const roots: CheckpointRecord[] = [];
  const unlinked = new Map<string, CheckpointRecord[]>();
  const linked: Array<{ record: CheckpointRecord; root: string }> = [];
  for (const record of records.checkpoints) {
    if (record.checkpointNs === "") {
      roots.push(record);
      continue;
    }
    const root = rootParentOf(record);
    if (root !== undefined) linked.push({ record, root });
    else {
      const list = unlinked.get(record.checkpointNs) ?? [];
      unlinked.set(record.checkpointNs, list);
      list.push(record);
    }
  }
  const keepNewest = (list: CheckpointRecord[]): string | undefined => {
    list.sort((a, b) => compareIds(b.checkpointId, a.checkpointId));
    let oldestKept: string | undefined;
    list.forEach((record, i) => {
      const key = checkpointKey(record.checkpointNs, record.checkpointId);
      const withinLast = selection.keepLast === undefined || i < selection.keepLast;
      const ts = facts.get(key)?.ts;
      const recent = selection.olderThan === undefined || ts === undefined || ts >= selection.olderThan;
      if (i === 0 || (withinLast && recent)) {
        keep.add(key);
        oldestKept = record.checkpointId;
      }
    });
    return oldestKept;
  };
  const cutoff = keepNewest(roots);
  for (const list of unlinked.values()) keepNewest(list);
  for (const { record, root } of linked) {
    if (cutoff === undefined || compareIds(root, cutoff) >= 0) keep.add(checkpointKey(record.checkpointNs, record.checkpointId));
  }
  return keep;
}

/** The root checkpoint a subgraph checkpoint belongs to, from `metadata.parents[""]`. */
function rootParentOf(record: CheckpointRecord): string | undefined {
  const parents = filterableMetadata(record).parents;
  if (parents === null || typeof parents !== "object" || Array.isArray(parents)) return undefined;
  const root = Object.prototype.hasOwnProperty.call(parents, "") ? (parents as Record<string, unknown>)[""] : undefined;
  return typeof root === "string" && root !== "" ? root : undefined;
}

/**
 * Decides what stays of one thread when `selected` checkpoints are kept: those, plus every checkpoint
 * a kept one reads (transitively), plus every blob, write and chunk a kept checkpoint reads. Everything
 * else is listed for removal, including records a crash left behind: blobs and chunks nothing kept
 * references, and writes without a checkpoint whose id is older than the thread's newest checkpoint
 * (a newer one may belong to a put still in flight).
 */
export function planRetention(records: ThreadRecords, selected: Set<string>, facts: Map<string, CheckpointFacts>): RetentionPlan {
  const byKey = new Map<string, CheckpointRecord>();
  for (const record of records.checkpoints) byKey.set(checkpointKey(record.checkpointNs, record.checkpointId), record);
  const blobs = new Map<string, BlobKey>();
  for (const blob of records.blobs) blobs.set(blobId(blob.checkpointNs, blob.channel, blob.version), blob);

  const kept = new Set<string>();
  const queue: string[] = [];
  const keep = (key: string) => {
    if (kept.has(key) || !byKey.has(key)) return;
    kept.add(key);
    queue.push(key);
  };
  for (const key of selected) keep(key);
  // Ancestors already walked for a channel: a later walk for the same channel stops there.
  const walked = new Set<string>();
  while (queue.length > 0) {
    const key = queue.pop()!;
    const record = byKey.get(key)!;
    const ns = record.checkpointNs;
    const parentKey = record.parentCheckpointId === undefined ? undefined : checkpointKey(ns, record.parentCheckpointId);
    // Format v < 4 keeps pending sends as its parent's TASKS writes; reading it migrates them.
    const v = facts.get(key)?.v;
    if (parentKey !== undefined && v !== undefined && v < 4) keep(parentKey);
    for (const channel of deltaChannelsToReplay(record, blobs)) {
      let ancestorKey = parentKey;
      while (ancestorKey !== undefined) {
        const mark = `${ancestorKey}\u0000${channel}`;
        if (walked.has(mark)) break;
        walked.add(mark);
        const ancestor = byKey.get(ancestorKey);
        if (!ancestor) break; // the chain ends here; the runtime's walk stops here too
        keep(ancestorKey);
        const version = ancestor.channelVersions[channel];
        const blob = version === undefined ? undefined : blobs.get(blobId(ns, channel, version));
        if (blob && !blob.empty) break; // the seed
        ancestorKey = ancestor.parentCheckpointId === undefined ? undefined : checkpointKey(ns, ancestor.parentCheckpointId);
      }
    }
  }

  // Blobs the kept checkpoints read: each channel's blob and its chain of delta bases.
  const neededBlobs = new Set<string>();
  for (const key of kept) {
    const record = byKey.get(key)!;
    for (const [channel, version] of Object.entries(record.channelVersions)) {
      let id: string | undefined = blobId(record.checkpointNs, channel, version);
      while (id !== undefined && !neededBlobs.has(id)) {
        const blob = blobs.get(id);
        if (!blob) break;
        neededBlobs.add(id);
        id = blob.baseVersion === undefined ? undefined : blobId(record.checkpointNs, channel, blob.baseVersion);
      }
    }
  }

  // Writes: those of removed checkpoints go with them; writes without a checkpoint go when they are
  // older than the thread's newest checkpoint.
  let newest: string | undefined;
  for (const record of records.checkpoints) if (newest === undefined || compareIds(record.checkpointId, newest) > 0) newest = record.checkpointId;
  const removedIds = new Map<string, { checkpointNs: string; checkpointId: string }>();
  let removedWrites = 0;
  let bytes = 0;
  const keptWrites: WriteKey[] = [];
  for (const write of records.writes) {
    const key = checkpointKey(write.checkpointNs, write.checkpointId);
    const goes = byKey.has(key) ? !kept.has(key) : newest !== undefined && compareIds(write.checkpointId, newest) < 0;
    if (goes) {
      removedIds.set(key, { checkpointNs: write.checkpointNs, checkpointId: write.checkpointId });
      removedWrites += 1;
      bytes += write.bytes;
    } else {
      keptWrites.push(write);
    }
  }
  let removedCheckpoints = 0;
  let keptForHistory = 0;
  for (const [key, record] of byKey) {
    if (kept.has(key)) {
      if (!selected.has(key)) keptForHistory += 1;
      continue;
    }
    removedIds.set(key, { checkpointNs: record.checkpointNs, checkpointId: record.checkpointId });
    removedCheckpoints += 1;
    bytes += record.checkpoint.data.byteLength + record.metadata.data.byteLength;
  }

  // Chunks and pieces anything kept references.
  const neededHashes = new Set<string>();
  const reference = (refs: string[] | undefined, chunkHash: string | undefined) => {
    for (const hash of refs ?? []) neededHashes.add(hash);
    if (chunkHash !== undefined) neededHashes.add(chunkHash);
  };
  const referenceValue = (value: SerializedValue) => reference(value.refs, value.chunkRef?.hash);
  for (const key of kept) {
    const record = byKey.get(key)!;
    referenceValue(record.checkpoint);
    referenceValue(record.metadata);
  }
  const removedBlobs: DeleteRecordsRequest["blobs"] = [];
  for (const [id, blob] of blobs) {
    if (neededBlobs.has(id)) {
      reference(blob.refs, blob.chunkHash);
    } else {
      removedBlobs.push({ checkpointNs: blob.checkpointNs, channel: blob.channel, version: blob.version });
      bytes += blob.bytes;
    }
  }
  for (const write of keptWrites) reference(write.refs, write.chunkHash);
  const removedHashes = new Set<string>();
  let removedChunks = 0;
  for (const chunk of records.chunks) {
    if (neededHashes.has(chunk.hash)) continue;
    removedHashes.add(chunk.hash);
    removedChunks += 1;
    bytes += chunk.bytes;
  }

  return {
    kept,
    request: { checkpoints: [...removedIds.values()], blobs: removedBlobs, chunks: [...removedHashes] },
    result: {
      threads: 1,
      checkpoints: removedCheckpoints,
      writes: removedWrites,
      blobs: removedBlobs.length,
      chunks: removedChunks,
      bytes,
      keptForHistory,
    },
  };
}

/**
 * The channels of a checkpoint whose value the runtime rebuilds from ancestors' writes: a version
 * without a stored value (an `"empty"` blob, or none), counted in the metadata's
 * `counters_since_delta_snapshot`.
 */
function deltaChannelsToReplay(record: CheckpointRecord, blobs: Map<string, BlobKey>): string[] {
  const counters = filterableMetadata(record).counters_since_delta_snapshot;
  if (counters === null || typeof counters !== "object" || Array.isArray(counters)) return [];
  const out: string[] = [];
  for (const channel of Object.keys(counters)) {
    if (!Object.prototype.hasOwnProperty.call(record.channelVersions, channel)) continue;
    const blob = blobs.get(blobId(record.checkpointNs, channel, record.channelVersions[channel]!));
    if (!blob || blob.empty) out.push(channel);
  }
  return out;
}

function blobId(checkpointNs: string, channel: string, version: string): string {
  return `${checkpointNs}\u0000${channel}\u0000${version}`;
}

/** Checkpoint ids compare as strings, by code unit (they are ASCII in practice). */
function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
