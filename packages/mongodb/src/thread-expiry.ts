/**
 * Whole-thread TTL. MongoDB's TTL monitor deletes document by document, in no order, so it would leave
 * a thread in part (a checkpoint without its blobs, a child without its ancestors); FerretDB has no TTL
 * indexes at all. So one document per thread holds its expiry: a thread is live or expired as a whole,
 * and expired threads are deleted by a sweep, checkpoints first.
 *
 * @module
 */
import type { Collection, Filter } from "mongodb";

import { MongoThreadExpiringError, onlyDuplicateKeys } from "./errors.js";

/** A thread's expiry, `_id` the thread id; `deleting` is set while a sweep deletes the thread. */
export interface ThreadDoc {
  _id: string;
  expires_at: Date;
  deleting?: Date;
}

/** Runs one database command, translated and reported (the store's `run`). */
export type Run = <T>(command: string, operation: string, op: () => Promise<T>) => Promise<T>;

/** A sweep that claimed a thread and did not finish within this time (its process died) may be redone. */
const STALE_CLAIM_MS = 60_000;

export class ThreadExpiry {
  constructor(
    private readonly threads: Collection<ThreadDoc>,
    private readonly ttlMs: number,
    private readonly run: Run,
    /** Deletes the thread's checkpoints, then its parts. */
    private readonly deleteData: (threadId: string, operation: string) => Promise<void>,
  ) {}

  /** The thread's expiry document, to read alongside a read's first query. */
  read(threadId: string, operation: string): Promise<ThreadDoc | null> {
    const found = this.run("find thread", operation, () => this.threads.findOne({ _id: threadId }));
    found.catch(() => {});
    return found;
  }

  /** The ids, among these, of threads that expired. */
  async expired(threadIds: string[], operation: string): Promise<Set<string>> {
    const docs = await this.run("find threads", operation, () => this.threads.find({ _id: { $in: threadIds } }, { batchSize: 100_000 }).toArray());
    return new Set(docs.filter((doc) => !live(doc)).map((doc) => doc._id));
  }

  /**
   * Before a write: moves the thread's expiry forward, in its own round trip before the write's parts,
   * so that a sweep can never delete a part of a write that is still landing. A thread that already
   * expired is deleted first (readers see it gone already), so the write starts it anew.
   */
  async touch(threadId: string, operation: string): Promise<void> {
    const refresh = () =>
      this.run("update thread", operation, async () => {
        try {
          await this.threads.updateOne(
            { _id: threadId, expires_at: { $gt: new Date() }, deleting: { $exists: false } },
            { $set: { expires_at: new Date(Date.now() + this.ttlMs) } },
            { upsert: true },
          );
          return true;
        } catch (error) {
          if (onlyDuplicateKeys(error)) return false; // the document exists, but expired or being deleted
          throw error;
        }
      });
    if (await refresh()) return;
    if ((await this.expire(threadId, operation)) && (await refresh())) return;
    throw new MongoThreadExpiringError(threadId);
  }

  /** Deletes up to `limit` expired threads; returns how many. */
  async sweep(limit: number, operation: string): Promise<number> {
    const expired = await this.run("find expired threads", operation, () => this.threads.find(expiredFilter(), { projection: { _id: 1 }, limit }).toArray());
    let deleted = 0;
    for (const { _id } of expired) if (await this.expire(_id, operation)) deleted += 1;
    return deleted;
  }

  /** Forgets a thread `deleteThread` removed. */
  async forget(threadId: string, operation: string): Promise<void> {
    await this.run("delete thread", operation, () => this.threads.deleteOne({ _id: threadId }));
  }

  /** Claims an expired thread, deletes its data (checkpoints first), then its expiry document. */
  private async expire(threadId: string, operation: string): Promise<boolean> {
    const now = new Date();
    const claimed = await this.run("claim thread", operation, () => this.threads.findOneAndUpdate({ _id: threadId, ...expiredFilter(now) }, { $set: { deleting: now } }));
    if (!claimed) return false;
    await this.deleteData(threadId, operation);
    await this.run("delete thread", operation, () => this.threads.deleteOne({ _id: threadId, deleting: now }));
    return true;
  }
}

/**
 * Whether a thread is visible. A thread without an expiry document was written before the TTL was
 * turned on: it lives until its next write.
 */
export function live(doc: ThreadDoc | null): boolean {
  return !doc || (doc.deleting === undefined && doc.expires_at.getTime() > Date.now());
}

function expiredFilter(now = new Date()): Filter<ThreadDoc> {
  return {
    $or: [{ deleting: { $exists: false }, expires_at: { $lte: now } }, { deleting: { $lte: new Date(now.getTime() - STALE_CLAIM_MS) } }],
  };
}
