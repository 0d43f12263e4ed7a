/**
 * Retention on one thread's partition: what `listThreadRecords` reports of its items, and which items
 * `deleteRecords` removes for a request of core's.
 *
 * The partition holds more than core's records, and core must never see the difference:
 *
 * - **Spilled items** (`x`) keep their other attributes as chunks of the thread, which no record
 *   references. While an item refers to them, those chunks are not listed (core would take them for
 *   orphans), and they go with the last item that refers to them, after it. Spill chunks that no item
 *   refers to any more (a crash between the two) are listed as chunks, which core removes as orphans.
 * - **Batch commit items** sit in their checkpoint's write range and go with its writes, before them:
 *   a crash between the two then leaves write items, which the next listing reports (and core removes),
 *   rather than a commit item no listing shows. Writes of a batch never committed are listed as writes
 *   too, so that they go with their checkpoint, or as orphans.
 * - The **lease and status items** (`manyWorkers`) are neither listed nor removed here: the lease's
 *   token must keep growing, and the status changes only through the request's `status`.
 * - A record of a **hashed namespace** (longer than 200 bytes) carries only the hash in its key; the
 *   name comes from that namespace's checkpoints. When none is left, it is listed under
 *   {@link UNNAMED_NS} and the hash, so that core can still name it for removal.
 *
 * @module
 */
import type { BlobKey, ChunkKey, ChunkRecord, DeleteRecordsRequest, ThreadRecords, WriteKey } from "@resumable/core";

import type { Item } from "./item-size.js";
import { readCheckpoint, readChunk, spillRef, unspill } from "./items.js";
import {
  SK,
  UNNAMED_NS,
  blobKey,
  checkpointKey,
  nsComponentOf,
  nsKey,
  nsOfComponent,
  parseBlobKey,
  parseChunkKey,
  parseWriteKey,
  writesPrefix,
  writesPrefixOfKey,
} from "./keys.js";

type Named<T> = { component: string; key: Omit<T, "checkpointNs"> };

/** Reads the items of a thread's partition as they come, page by page, keeping no value bytes but the ones it needs. */
export class ThreadListing {
  private readonly checkpointItems: Item[] = [];
  private readonly blobs: Array<Named<BlobKey>> = [];
  private readonly writes: Array<Named<WriteKey>> = [];
  /** Spilled blob and write items, read once their chunks are at hand. */
  private readonly spilled: Item[] = [];
  private readonly chunks: ChunkKey[] = [];
  /** Spill references of every item, by hash: the chunk count. */
  private readonly spillRefs = new Map<string, number>();
  /** Bytes of chunks that spilled items read (those met after their item; a later one is fetched). */
  private readonly spillChunks: ChunkRecord[] = [];

  /** Takes one item of the partition (in sort-key order: blobs, checkpoints, chunks, lease, status, writes). */
  add(item: Item): void {
    const sk = item[SK]!.S!;
    const ref = spillRef(item);
    if (ref && !sk.startsWith("k|")) this.spillRefs.set(ref.hash, ref.count);
    if (sk.startsWith("c|")) this.checkpointItems.push(item);
    else if (sk.startsWith("b|")) {
      if (ref) this.spilled.push(item);
      else this.blobs.push(blobOf(item));
    } else if (sk.startsWith("w|")) {
      if (item["wc"] !== undefined) return;
      if (ref) this.spilled.push(item);
      else this.writes.push(writeOf(item));
    } else if (sk.startsWith("k|")) {
      const chunk = readChunk(item);
      this.chunks.push({ hash: chunk.hash, index: chunk.index, bytes: chunk.data.byteLength });
      if (this.spillRefs.has(chunk.hash)) this.spillChunks.push(chunk);
    }
  }

  /** Spill references whose chunks the listing did not bring (their item came after them): hash and count. */
  missingSpills(): Map<string, number> {
    const have = new Map<string, number>();
    for (const chunk of this.spillChunks) have.set(chunk.hash, (have.get(chunk.hash) ?? 0) + 1);
    return new Map([...this.spillRefs].filter(([hash, count]) => (have.get(hash) ?? 0) < count));
  }

  /**
   * The thread's records, with `fetched` (the chunks of {@link missingSpills}). A spilled checkpoint
   * whose chunks are missing cannot be read (nor can `getTuple`): its error is thrown. A spilled blob
   * or write whose chunks are missing is a part a crash left (a put writes an item's spill chunks in the
   * same batch as the item, and its checkpoint only after both): listed by its key alone, so that core
   * removes it when no checkpoint reads it.
   */
  finish(fetched: ChunkRecord[]): ThreadRecords {
    const byHash = new Map<string, ChunkRecord[]>();
    for (const chunk of [...this.spillChunks, ...fetched]) byHash.set(chunk.hash, [...(byHash.get(chunk.hash) ?? []), chunk]);
    const restore = (item: Item): Item | undefined => {
      const ref = spillRef(item)!;
      const indices = new Set((byHash.get(ref.hash) ?? []).map((c) => c.index));
      for (let i = 0; i < ref.count; i += 1) if (!indices.has(i)) return undefined;
      return unspill(item, byHash.get(ref.hash)!);
    };
    const checkpoints = this.checkpointItems.map((item) => readCheckpoint(spillRef(item) ? unspill(item, byHash.get(spillRef(item)!.hash) ?? []) : item));
    const names = new Map(checkpoints.map((r) => [nsKey(r.checkpointNs), r.checkpointNs]));
    const name = (component: string) => nsOfComponent(component) ?? names.get(component) ?? `${UNNAMED_NS}${component}`;
    const blobs = [...this.blobs];
    const writes = [...this.writes];
    for (const item of this.spilled) {
      const sk = item[SK]!.S!;
      const whole = restore(item);
      if (sk.startsWith("b|")) {
        if (whole) blobs.push(blobOf(whole));
        else blobs.push({ component: nsComponentOf(sk), key: { ...parseBlobKey(sk), empty: false, bytes: 0 } });
      } else if (whole) writes.push(writeOf(whole));
      else {
        const { checkpointId, taskId, idx } = parseWriteKey(sk);
        writes.push({ component: nsComponentOf(sk), key: { checkpointId, taskId, idx, channel: item["ch"]?.S ?? "", bytes: 0 } });
      }
    }
    return {
      checkpoints,
      blobs: blobs.map(({ component, key }) => ({ checkpointNs: name(component), ...key })),
      writes: writes.map(({ component, key }) => ({ checkpointNs: name(component), ...key })),
      chunks: this.chunks.filter((c) => !this.spillRefs.has(c.hash)),
    };
  }
}

/** A value's references as a listing reports them. */
function references(item: Item): { bytes: number; refs?: string[]; chunkHash?: string } {
  const refs = item["vr"]?.S;
  const chunk = item["vc"]?.S;
  return {
    bytes: item["vd"]?.B?.byteLength ?? 0,
    ...(refs !== undefined ? { refs: JSON.parse(refs) as string[] } : {}),
    ...(chunk !== undefined ? { chunkHash: (JSON.parse(chunk) as { hash: string }).hash } : {}),
  };
}

function blobOf(item: Item): Named<BlobKey> {
  const sk = item[SK]!.S!;
  const base = item["bv"]?.S;
  return {
    component: nsComponentOf(sk),
    key: { ...parseBlobKey(sk), empty: (item["vt"]?.S ?? "empty") === "empty", ...(base !== undefined ? { baseVersion: base } : {}), ...references(item) },
  };
}

function writeOf(item: Item): Named<WriteKey> {
  const sk = item[SK]!.S!;
  const { checkpointId, taskId, idx } = parseWriteKey(sk);
  return { component: nsComponentOf(sk), key: { checkpointId, taskId, idx, channel: item["ch"]!.S!, ...references(item) } };
}

/**
 * The sort keys `deleteRecords` removes, in the order it removes them (each list after the one before
 * has gone): checkpoint items (newest first), the batch commit items of their writes, their write
 * items, blobs, then chunks (those of the request's hashes, and the spill chunks of removed items that
 * no remaining item refers to).
 */
export interface Removal {
  checkpoints: string[];
  commits: string[];
  writes: string[];
  blobs: string[];
  chunks: string[];
}

/**
 * What removing `request` takes from a partition whose items are `inventory` (keys and `x`): only
 * items that exist, and never a chunk a remaining item's spill refers to.
 */
export function removalOf(request: DeleteRecordsRequest, inventory: Item[]): Removal {
  const present = new Set(inventory.map((item) => item[SK]!.S!));
  const existing = (keys: string[]) => [...new Set(keys)].filter((sk) => present.has(sk));
  const byIdDescending = [...request.checkpoints].sort((a, b) => compareBytes(b.checkpointId, a.checkpointId));
  const checkpoints = existing(byIdDescending.map((c) => checkpointKey(c.checkpointNs, c.checkpointId)));
  const prefixes = new Set(request.checkpoints.map((c) => writesPrefix(c.checkpointNs, c.checkpointId)));
  const commits: string[] = [];
  const writes: string[] = [];
  for (const item of inventory) {
    const sk = item[SK]!.S!;
    if (!sk.startsWith("w|")) continue;
    const prefix = writesPrefixOfKey(sk);
    if (prefixes.has(prefix)) (sk[prefix.length] === "!" ? commits : writes).push(sk);
  }
  const blobs = existing(request.blobs.map((b) => blobKey(b.checkpointNs, b.channel, b.version)));
  const removed = new Set([...checkpoints, ...commits, ...writes, ...blobs]);
  const stillReferenced = new Set<string>();
  const released = new Set<string>();
  for (const item of inventory) {
    const ref = spillRef(item);
    if (!ref || item[SK]!.S!.startsWith("k|")) continue;
    (removed.has(item[SK]!.S!) ? released : stillReferenced).add(ref.hash);
  }
  const hashes = new Set([...request.chunks, ...released]);
  const chunks = inventory
    .map((item) => item[SK]!.S!)
    .filter((sk) => {
      if (!sk.startsWith("k|")) return false;
      const { hash } = parseChunkKey(sk);
      return hashes.has(hash) && !stillReferenced.has(hash);
    });
  return { checkpoints, commits, writes, blobs, chunks };
}

/** Code-point order (DynamoDB's order of sort keys). */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}
