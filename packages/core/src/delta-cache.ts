/**
 * What the saver remembers of the last checkpoint it wrote or read on each thread, so that the next
 * `put` can store a list channel as the elements it gained: bounded (least recently used), so memory
 * does not grow with the number of threads.
 *
 * @module
 */

/** The last stored list value of one channel, on the lineage of a cached checkpoint. */
export interface ListState {
  /** The version under which that value is stored (a whole value or a delta). */
  version: string;
  /** A copy of the list as it was stored: the runtime may mutate its own array afterwards. */
  elements: readonly unknown[];
  /** The version of the whole value the chain starts from (`version` itself for a whole value). */
  root: string;
  /** Deltas between the root and `version` (0 for a whole value). */
  depth: number;
  /** About what the elements take in memory (their serialized size), for the cache's bound. */
  bytes: number;
}

/** The cached state of one thread and namespace: one checkpoint's view of its list channels. */
export interface LineageState {
  /** The checkpoint these states belong to: a delta is written only on top of it. */
  checkpointId: string;
  /** The checkpoint's channel versions (to carry delta roots over to a child). */
  channelVersions: Readonly<Record<string, string>>;
  /** The checkpoint's delta roots. */
  deltaRoots: Readonly<Record<string, string>>;
  /** channel → last stored list value on this lineage. */
  lists: ReadonlyMap<string, ListState>;
  bytes: number;
}

/** Limits of the cache. */
export interface DeltaCacheOptions {
  /** Threads (and namespaces) remembered at once. Default 1000. */
  maxThreads?: number;
  /** Approximate bytes of list elements remembered, all threads together. Default 64 MB. */
  maxBytes?: number;
}

/** A least-recently-used map from `(thread, namespace)` to its {@link LineageState}. */
export class DeltaCache {
  private readonly entries = new Map<string, LineageState>();
  /** The most recently used key: already last in {@link entries}, so using it again moves nothing. */
  private newest: string | undefined;
  private total = 0;
  private readonly maxThreads: number;
  private readonly maxBytes: number;

  constructor(options: DeltaCacheOptions = {}) {
    this.maxThreads = options.maxThreads ?? 1000;
    this.maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  }

  /** The state of a thread's namespace, marked as recently used. */
  get(threadId: string, checkpointNs: string): LineageState | undefined {
    const key = cacheKey(threadId, checkpointNs);
    const entry = this.entries.get(key);
    if (entry && key !== this.newest) {
      this.entries.delete(key);
      this.entries.set(key, entry);
      this.newest = key;
    }
    return entry;
  }

  set(threadId: string, checkpointNs: string, state: LineageState): void {
    const key = cacheKey(threadId, checkpointNs);
    const previous = this.entries.get(key);
    if (previous) {
      this.total -= previous.bytes;
      // Map.set keeps an existing key where it is: the newest is already last.
      if (key !== this.newest) this.entries.delete(key);
    }
    if (state.bytes > this.maxBytes || this.maxThreads <= 0) {
      if (previous) this.entries.delete(key);
      if (key === this.newest) this.newest = undefined;
      return;
    }
    this.entries.set(key, state);
    this.newest = key;
    this.total += state.bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.maxThreads && this.total <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.total -= entry.bytes;
    }
  }

  /** Forgets every namespace of a thread (after `deleteThread`, its blobs are gone). */
  deleteThread(threadId: string): void {
    const prefix = `${threadId}\u0000`;
    for (const [key, entry] of this.entries) {
      if (key.startsWith(prefix)) {
        this.entries.delete(key);
        this.total -= entry.bytes;
        if (key === this.newest) this.newest = undefined;
      }
    }
  }

  /** Threads remembered now (for tests). */
  get size(): number {
    return this.entries.size;
  }
}

function cacheKey(threadId: string, checkpointNs: string): string {
  return `${threadId}\u0000${checkpointNs}`;
}

/** Whether `list` starts with exactly the elements of `prefix` (the same objects, or the same primitives by Object.is, so -0 is not 0). */
export function extendsList(list: readonly unknown[], prefix: readonly unknown[]): boolean {
  if (list.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i += 1) if (!Object.is(list[i], prefix[i])) return false;
  return true;
}
