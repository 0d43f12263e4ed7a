/**
 * Copying a thread: every checkpoint of every namespace, with its pending writes, its blobs (delta
 * chains and all) and the shared pieces and chunks they reference, under a new thread id, record for
 * record. Nothing is deserialized, so a copy holds exactly the bytes of the original and reads back
 * exactly as it does, whatever storage form each value has.
 *
 * Checkpoints are copied oldest first (ids ascending across namespaces), each after its pending
 * writes (invisible until their checkpoint lands) and with every blob and chunk it reads: at any moment
 * the target holds a prefix of the source in which every checkpoint is whole, writes included, and has
 * its ancestors, so a copy cut short by a crash is readable as far as it got, and running the copy
 * again completes it (every insert is idempotent).
 *
 * Every blob is written by the put of a checkpoint whose channel versions name it, and the base of a
 * delta is always an older blob of the same lineage, so copying each checkpoint's own blobs, oldest
 * first, copies every delta chain whole even from a store that returns only those (and no delta
 * ranges) from `getCheckpoint`.
 *
 * @module
 */
import { CopyTargetNotEmptyError } from "./errors.js";
import type {
  BlobRecord,
  ChunkRecord,
  CheckpointStore,
  SerializedValue,
  StoredCheckpoint,
  ThreadStatusRecord,
  ThreadStatusWrite,
  WriteRecord,
} from "./store.js";

/** What {@link copyThreadRecords} did. */
export interface CopyThreadResult {
  /** Checkpoints written to the target (all namespaces). */
  checkpoints: number;
  /** Pending writes written to the target. */
  writes: number;
  /** Checkpoints the target already had from an earlier, interrupted copy. */
  alreadyCopied: number;
}

/** How the copy gives the target a status, on stores that keep one. */
export interface CopyStatusSource {
  /** The source's status record, when it has one. */
  source: ThreadStatusRecord | undefined;
  /** The state to record for the latest root checkpoint when the source has no status record. */
  fallback(): Promise<"pending" | "done">;
}

/** A checkpoint's position: namespace and id. */
interface Position {
  checkpointNs: string;
  checkpointId: string;
}

/**
 * Copies thread `from` to thread `to` at the record level (see the module comment). The target must
 * be empty, or hold only checkpoints of the source (an earlier copy cut short); otherwise
 * {@link CopyTargetNotEmptyError}, and nothing is written.
 *
 * @param status Present when the store keeps thread status: the target's latest root checkpoint gets
 *   the source's state, error and interrupts (a `"dead"` thread is copied as `"failed"` with its
 *   error), its attempts start again from 0; earlier root checkpoints are copied as `"pending"`.
 */
export async function copyThreadRecords(
  store: CheckpointStore,
  from: string,
  to: string,
  status: CopyStatusSource | undefined,
): Promise<CopyThreadResult> {
  const source = await positions(store, from);
  const target = await positions(store, to);
  const sourceKeys = new Set(source.map(keyOf));
  const foreign = target.filter((p) => !sourceKeys.has(keyOf(p)));
  if (foreign.length > 0) throw new CopyTargetNotEmptyError(to, from, foreign.length);
  const done = new Set(target.map(keyOf));

  source.sort((a, b) => (a.checkpointId < b.checkpointId ? -1 : a.checkpointId > b.checkpointId ? 1 : a.checkpointNs < b.checkpointNs ? -1 : 1));
  const latestRoot = [...source].reverse().find((p) => p.checkpointNs === "")?.checkpointId;
  const sentBlobs = new Set<string>();
  const sentChunks = new Set<string>();
  const result: CopyThreadResult = { checkpoints: 0, writes: 0, alreadyCopied: 0 };
  for (const position of source) {
    const stored = await store.getCheckpoint({ threadId: from, ...position });
    if (!stored) continue; // deleted from the source while copying
    const already = done.has(keyOf(position));
    // An interrupted copy may have stopped between a checkpoint's writes and the checkpoint: rewrite both.
    const blobs = stored.blobs.filter((b) => {
      const key = `${position.checkpointNs}\u0000${b.channel}\u0000${b.version}`;
      if (sentBlobs.has(key)) return false;
      sentBlobs.add(key);
      return true;
    });
    const values: SerializedValue[] = [stored.record.checkpoint, stored.record.metadata, ...blobs.map((b) => b.value)];
    const chunks = await chunksOf(store, from, stored, values, sentChunks);
    const rootStatus = position.checkpointNs === "" && status ? await statusOf(position.checkpointId, latestRoot, status) : undefined;
    // Writes first: until its checkpoint lands they are invisible, so the checkpoint never shows
    // without them (a copy killed between the two would otherwise leave its newest checkpoint without
    // its pending writes; the retention crash sweep found it).
    result.writes += await copyWrites(store, from, to, position, stored, sentChunks);
    await store.putCheckpoint({
      record: { ...stored.record, threadId: to },
      blobs: blobs.map((b): BlobRecord => ({ ...b })),
      chunks,
      ...(rootStatus ? { status: rootStatus } : {}),
    });
    if (rootStatus && position.checkpointId === latestRoot && status?.source?.state === "dead" && store.patchThreadStatus) {
      await store.patchThreadStatus({ threadId: to, patch: { checkpointId: position.checkpointId, state: "dead", updatedAt: rootStatus.updatedAt } });
    }
    if (already) result.alreadyCopied += 1;
    else result.checkpoints += 1;
  }
  return result;
}

/** Every checkpoint of a thread, in any order. */
async function positions(store: CheckpointStore, threadId: string): Promise<Position[]> {
  const found: Position[] = [];
  for await (const stored of store.listCheckpoints({ threadId })) {
    found.push({ checkpointNs: stored.record.checkpointNs, checkpointId: stored.record.checkpointId });
  }
  return found;
}

function keyOf(p: Position): string {
  return `${p.checkpointNs}\u0000${p.checkpointId}`;
}

/** The chunks and pieces `values` reference that were not sent yet, from the stored ones or one fetch. */
async function chunksOf(
  store: CheckpointStore,
  threadId: string,
  stored: StoredCheckpoint,
  values: SerializedValue[],
  sent: Set<string>,
): Promise<ChunkRecord[]> {
  const needed = new Set<string>();
  for (const value of values) {
    if (value.chunkRef && !sent.has(value.chunkRef.hash)) needed.add(value.chunkRef.hash);
    for (const hash of value.refs ?? []) if (!sent.has(hash)) needed.add(hash);
  }
  if (needed.size === 0) return [];
  const chunks = (stored.chunks ?? []).filter((c) => needed.has(c.hash));
  const missing = [...needed].filter((hash) => !chunks.some((c) => c.hash === hash));
  if (missing.length > 0) chunks.push(...(await store.getChunks(threadId, missing)));
  for (const hash of needed) sent.add(hash);
  return chunks.map((c) => ({ ...c }));
}

/** The status a copied root checkpoint carries. */
async function statusOf(checkpointId: string, latestRoot: string | undefined, status: CopyStatusSource): Promise<ThreadStatusWrite> {
  const updatedAt = Date.now();
  if (checkpointId !== latestRoot) return { state: "pending", updatedAt };
  const source = status.source;
  if (!source || source.checkpointId !== checkpointId) return { state: await status.fallback(), updatedAt };
  const state = source.state === "dead" ? "failed" : source.state;
  return {
    state,
    updatedAt,
    ...(source.error !== undefined ? { error: source.error } : {}),
    ...(source.interrupts !== undefined ? { interrupts: source.interrupts } : {}),
  };
}

/** Copies a checkpoint's pending writes, one call per task, as they were recorded. */
async function copyWrites(
  store: CheckpointStore,
  from: string,
  to: string,
  position: Position,
  stored: StoredCheckpoint,
  sentChunks: Set<string>,
): Promise<number> {
  const byTask = new Map<string, WriteRecord[]>();
  for (const write of stored.writes) {
    const list = byTask.get(write.taskId);
    if (list) list.push({ ...write });
    else byTask.set(write.taskId, [{ ...write }]);
  }
  for (const writes of byTask.values()) {
    const chunks = await chunksOf(store, from, stored, writes.map((w) => w.value), sentChunks);
    await store.putWrites({ threadId: to, checkpointNs: position.checkpointNs, checkpointId: position.checkpointId, writes, chunks, mode: "ignore" });
  }
  return stored.writes.length;
}
