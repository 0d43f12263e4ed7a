/**
 * Many workers (the `manyWorkers` option): thread leases with fencing tokens and a status per thread,
 * without multi-document transactions, and without relying on conditional updates being atomic.
 *
 * FerretDB 1.24 runs an `update` or `findAndModify` as a query followed by a write of the whole
 * document by `_id` (`handler/common/update.go`), so two conditional updates of one document can both
 * succeed. The one check it makes atomically, like MongoDB, is the unique `_id` of an insert. So a
 * thread's lease record is a register of immutable entries in `<prefix>leases`, `_id` = hash of
 * `(thread, seq)`: each entry holds the whole state after it (lease and status), and a change is the
 * insert of entry `seq + 1` computed from entry `seq`, the newest one. Of two changes computed from
 * the same entry, one insert wins and the other sees a duplicate key, reads the new newest entry and
 * decides again: a compare-and-set, for claims, renewals, releases, commits and status patches alike.
 *
 * | field                                             | what                                                       |
 * | ------------------------------------------------- | ---------------------------------------------------------- |
 * | `thread_id`, `seq`                                 | the entry's place (kept forever, so no insert reuses it)   |
 * | `token`, `worker`, `expires_at`, `released`       | the lease (`expires_at` in ms, by the writing client's clock) |
 * | `state`, `checkpoint_id`, `updated_at`, `error`, `interrupts` (JSON), `attempts`, `attempted_at` | the status |
 * | `op`                                              | the fenced call this entry commits (kept forever)          |
 *
 * The register is the commit point of every fenced write (see `LeaseFence` in `@resumable/core`):
 * records are written tagged with a fresh `op` (a checkpoint document gets `tag: { token, op }`, a
 * write document keeps its new value under `next` beside the one readers see now) and count as absent
 * until an entry with that `op` exists; that entry is appended only while the lease holds the call's
 * token unreleased, with the root checkpoint's status in the same entry. Then the records are untagged.
 * A reader looks entries up only when it meets a tagged record.
 *
 * The writer of entry `seq + 1` strips entry `seq` down to `thread_id`, `seq` and `op`, so the status
 * index `(state, updated_at, thread_id)` holds the newest entry of each thread and, after a crash
 * between the two requests, a few older ones, which `listThreads` recognises and skips.
 * `deleteThread` and the TTL sweep append an entry without status: the token stays. A removal of part
 * of a thread (`deleteRecords`, for prune) reads the newest entry as its fence and appends one only
 * for the status change it carries; no entry is ever removed.
 *
 * @module
 */
import { randomBytes } from "node:crypto";

import {
  InvalidConfigError,
  LeaseLostError,
  StoreBusyError,
  THREAD_STATES,
  applyPatchToRecord,
  type Lease,
  type LeaseClaim,
  type LeaseFence,
  type LeaseState,
  type ListThreadsQuery,
  type ThreadState,
  type ThreadStatusPatch,
  type ThreadStatusRecord,
  type ThreadStatusWrite,
} from "@resumable/core";
import type { Collection, Document, Filter } from "mongodb";

import { keyId } from "./documents.js";
import { onlyDuplicateKeys } from "./errors.js";
import type { Run } from "./thread-expiry.js";

/** The state an entry holds: the lease and the status. */
interface RegisterState {
  token?: number;
  worker?: string;
  expires_at?: number;
  released?: boolean;
  state?: ThreadState;
  checkpoint_id?: string;
  updated_at?: number;
  error?: string;
  interrupts?: string;
  attempts?: number;
  attempted_at?: number;
}

export interface LeaseDoc extends RegisterState {
  _id: string;
  thread_id: string;
  seq: number;
  op?: string;
}

const STATE_FIELDS = ["token", "worker", "expires_at", "released", "state", "checkpoint_id", "updated_at", "error", "interrupts", "attempts", "attempted_at"] as const;
const STATUS_FIELDS = ["state", "checkpoint_id", "updated_at", "error", "interrupts", "attempts", "attempted_at"] as const;
const STORE = "MongoDBStore";
/** Tries of one change through concurrent changes of the thread's register (parallel tasks commit at once). */
const APPEND_TRIES = 100;

/** The name of the status index `setup()` creates with `manyWorkers`. */
export const STATUS_INDEX = "state_updated_at_thread";
/** The name of the register's index `setup()` creates with `manyWorkers`. */
export const REGISTER_INDEX = "thread_seq";

/** A fresh op id. */
export const newOp = (): string => randomBytes(12).toString("base64url");

/** What a change decides from the newest state: the next state, or to change nothing (with a result). */
type Decision<T> = { next: RegisterState; op?: string; result: T } | { result: T };

/** Threads whose newest entry a store remembers (see {@link ManyWorkers.newest}). */
const CACHED_THREADS = 10_000;
/** Entries probed past the remembered one before reading the thread's entries at once. */
const PROBES = 3;

export class ManyWorkers {
  /**
   * The newest entry this store read or wrote, per thread. Entries never change (but for the strip),
   * so it stays right until another entry follows it: a read probes the next `_id`, a lookup FerretDB
   * answers without decoding the thread's other entries (it sorts in memory, a thread's whole history).
   */
  private readonly known = new Map<string, LeaseDoc>();

  constructor(
    readonly leases: Collection<LeaseDoc>,
    private readonly run: Run,
  ) {}

  /** Which of these `(thread, op)` pairs are committed, as `thread\u0000op` (one query). */
  async committed(pairs: Array<{ threadId: string; op: string }>, operation: string): Promise<Set<string>> {
    const keys = [...new Set(pairs.map((p) => `${p.threadId}\u0000${p.op}`))];
    // One equality query per pair, at once: FerretDB runs equalities in the database, not `$in`.
    const found = await Promise.all(
      keys.map((key) => {
        const [threadId, op] = key.split("\u0000") as [string, string];
        return this.run("find commit", operation, () => this.leases.findOne({ thread_id: threadId, op }, { projection: { _id: 1 } })).then((doc) => (doc ? key : undefined));
      }),
    );
    return new Set(found.filter((k): k is string => k !== undefined));
  }

  /** The thread's newest entry, or `undefined` when it has none. */
  private async newest(threadId: string, operation: string): Promise<LeaseDoc | undefined> {
    let doc = this.known.get(threadId);
    for (let probe = 0; doc && probe < PROBES; probe += 1) {
      const seq = doc.seq + 1;
      const next = await this.run("find lease", operation, () => this.leases.findOne({ _id: keyId([threadId, seq]) }));
      if (!next) return doc;
      doc = next;
    }
    doc = (await this.run("find lease", operation, () => this.leases.findOne({ thread_id: threadId }, { sort: { thread_id: 1, seq: -1 } }))) ?? undefined;
    if (doc) this.remember(doc);
    return doc;
  }

  private remember(doc: LeaseDoc): void {
    if (this.known.size >= CACHED_THREADS && !this.known.has(doc.thread_id)) this.known.clear();
    this.known.set(doc.thread_id, doc);
  }

  /**
   * Reads the newest entry, lets `decide` compute the next state (or throw, or change nothing), and
   * inserts it as the next entry; when another change took that place first, decides again from it.
   */
  private async change<T>(threadId: string, operation: string, decide: (current: LeaseDoc | undefined) => Decision<T>): Promise<T> {
    for (let attempt = 1; attempt <= APPEND_TRIES; attempt += 1) {
      const current = await this.newest(threadId, operation);
      const decision = decide(current);
      if (!("next" in decision)) return decision.result;
      const seq = (current?.seq ?? 0) + 1;
      const entry: LeaseDoc = { _id: keyId([threadId, seq]), thread_id: threadId, seq, ...clean(decision.next) };
      if (decision.op !== undefined) entry.op = decision.op;
      const inserted = await this.run("insert lease entry", operation, async () => {
        try {
          await this.leases.insertOne(entry);
          return true;
        } catch (error) {
          if (onlyDuplicateKeys(error)) return false;
          throw error;
        }
      });
      if (inserted) this.remember(entry);
      if (!inserted) {
        if (attempt > 3) await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, attempt * 2)));
        continue;
      }
      // Only the newest entry stays in the status index (and holds the state): strip the one before.
      if (current) {
        const off: Record<string, ""> = Object.fromEntries(STATE_FIELDS.map((f) => [f, ""] as const));
        await this.run("update lease strip", operation, () => this.leases.updateOne({ _id: current._id }, { $unset: off }));
      }
      return decision.result;
    }
    throw new StoreBusyError(STORE, 0);
  }

  /**
   * The commit point of a fenced (or status-carrying) call: the entry that names `op`, appended only
   * while the lease holds `fence.token` unreleased, with the status of a root checkpoint's put unless
   * the stored status names a later checkpoint. Throws {@link LeaseLostError}.
   */
  async commit(threadId: string, op: string, fence: LeaseFence | undefined, status: { write: ThreadStatusWrite; checkpointId: string } | undefined, operation: string): Promise<void> {
    await this.change(threadId, operation, (current) => {
      if (fence && (current?.token !== fence.token || current.released === true)) throw lostError(threadId, fence, current, operation);
      const next = stateOf(current);
      // A late put never moves a thread back: the status goes in only over an older checkpoint's.
      if (status && (next.checkpoint_id === undefined || next.checkpoint_id <= status.checkpointId)) Object.assign(next, statusFields(putRecord(status.write, status.checkpointId)));
      return { next, op, result: undefined };
    });
  }

  /** Free means never claimed, released, expired (by this process's clock) or held by the same worker. */
  async claim(claim: LeaseClaim): Promise<Lease | undefined> {
    checkLeaseArgs(claim.workerId, claim.ttlMs);
    return this.change(claim.threadId, "claimLease", (current) => {
      const now = Date.now();
      const free = current?.token === undefined || current.released === true || (current.expires_at ?? 0) <= now || current.worker === claim.workerId;
      if (!free) return { result: undefined };
      const token = (current?.token ?? 0) + 1;
      const expiresAt = now + claim.ttlMs;
      return { next: { ...stateOf(current), token, worker: claim.workerId, expires_at: expiresAt, released: false }, result: { threadId: claim.threadId, workerId: claim.workerId, token, expiresAt } };
    });
  }

  async renew(lease: Lease, ttlMs: number): Promise<Lease> {
    checkLeaseArgs(lease.workerId, ttlMs);
    return this.change(lease.threadId, "renewLease", (current) => {
      if (current?.token !== lease.token || current.released === true) throw lostError(lease.threadId, lease, current, "renewLease");
      const expiresAt = Date.now() + ttlMs;
      return { next: { ...stateOf(current), expires_at: expiresAt }, result: { threadId: lease.threadId, workerId: current.worker ?? lease.workerId, token: lease.token, expiresAt } };
    });
  }

  async release(lease: Lease): Promise<void> {
    await this.change(lease.threadId, "releaseLease", (current) =>
      // No longer current (or never claimed): nothing to give up.
      current?.token !== lease.token || current.released === true ? { result: undefined } : { next: { ...stateOf(current), released: true }, result: undefined },
    );
  }

  async get(threadId: string): Promise<LeaseState | undefined> {
    const doc = await this.newest(threadId, "getLease");
    if (doc?.token === undefined) return undefined;
    return { threadId, workerId: doc.worker ?? "", token: doc.token, expiresAt: doc.expires_at ?? 0, released: doc.released === true };
  }

  async status(threadId: string, operation: string): Promise<ThreadStatusRecord | undefined> {
    const doc = await this.newest(threadId, operation);
    return doc ? statusOf(doc) : undefined;
  }

  /** `undefined` when the thread has no status or it describes another checkpoint; with `fence`, a fenced change. */
  async patch(threadId: string, patch: ThreadStatusPatch, fence: LeaseFence | undefined, operation: string): Promise<ThreadStatusRecord | undefined> {
    return this.change(threadId, operation, (current): Decision<ThreadStatusRecord | undefined> => {
      if (fence && (current?.token !== fence.token || current.released === true)) throw lostError(threadId, fence, current, operation);
      const record = current ? statusOf(current) : undefined;
      const next = record ? applyPatchToRecord(record, patch) : undefined;
      if (!next) return { result: undefined };
      return { next: { ...stateOf(current), ...statusFields(next) }, result: next };
    });
  }

  /**
   * One query per state over the index `(state, updated_at, thread_id)`, merged in the order
   * `(updatedAt, threadId)` (strings by UTF-8 bytes, as the server orders them). An entry a crash left
   * unstripped has a successor: one more query finds those, and the page goes on past them.
   */
  async list(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    const limit = query.limit;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidConfigError("limit", `${STORE}: listThreads needs a positive integer limit, got ${String(limit)}.`);
    if (query.olderThan !== undefined && !(query.olderThan > 0)) return [];
    const lists = await Promise.all((query.states ?? THREAD_STATES).map((state) => this.listState(state, query)));
    return lists
      .flat()
      .sort((a, b) => a.updatedAt - b.updatedAt || Buffer.compare(Buffer.from(a.threadId), Buffer.from(b.threadId)))
      .slice(0, limit);
  }

  private async listState(state: ThreadState, query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    const out: ThreadStatusRecord[] = [];
    let after = query.after;
    for (;;) {
      const filter: Document = { state };
      if (query.olderThan !== undefined) filter["updated_at"] = { $lt: query.olderThan };
      if (after) filter["$or"] = [{ updated_at: { $gt: after.updatedAt } }, { updated_at: after.updatedAt, thread_id: { $gt: after.threadId } }];
      const page = await this.run("find statuses", "listThreads", () =>
        this.leases.find(filter as Filter<LeaseDoc>, { sort: { state: 1, updated_at: 1, thread_id: 1 }, limit: query.limit, batchSize: query.limit }).toArray(),
      );
      // Each entry's successor by `_id`, at once (lookups FerretDB answers without a scan).
      const stale = await Promise.all(
        page.map((d) => this.run("find lease successor", "listThreads", () => this.leases.findOne({ _id: keyId([d.thread_id, d.seq + 1]) }, { projection: { _id: 1 } }))),
      );
      page.forEach((doc, i) => {
        if (!stale[i]) out.push(statusOf(doc)!);
      });
      if (page.length < query.limit || out.length >= query.limit) return out;
      const last = page[page.length - 1]!;
      after = { updatedAt: last.updated_at!, threadId: last.thread_id };
    }
  }

  /**
   * Throws {@link LeaseLostError} unless the newest entry holds `fence.token` unreleased: the fence of a
   * removal (`deleteRecords`), read once before its first removal (FerretDB has no multi-document
   * atomicity, so a removal that passed it runs to its end, as a committed put's untag does).
   */
  async holds(threadId: string, fence: LeaseFence, operation: string): Promise<void> {
    const current = await this.newest(threadId, operation);
    if (current?.token !== fence.token || current.released === true) throw lostError(threadId, fence, current, operation);
  }

  /**
   * After a removal took away the root checkpoint the status describes: the status of the new latest
   * root checkpoint, whatever the stored one names (attempts 0), or none (`null`). With `fence`, only
   * while the lease still holds it: once the thread was taken over, its status is the new holder's.
   */
  async replaceStatus(threadId: string, status: { checkpointId: string; write: ThreadStatusWrite } | null, fence: LeaseFence | undefined, operation: string): Promise<void> {
    await this.change(threadId, operation, (current): Decision<undefined> => {
      if (fence && (current?.token !== fence.token || current.released === true)) return { result: undefined };
      const next = stateOf(current);
      if (status === null) {
        if (current?.state === undefined) return { result: undefined };
        for (const field of STATUS_FIELDS) delete next[field];
        return { next, result: undefined };
      }
      return { next: { ...next, ...statusFields(putRecord(status.write, status.checkpointId)) }, result: undefined };
    });
  }

  /** After `deleteThread` (and the TTL sweep): an entry without status; the lease stays. */
  async forget(threadId: string, operation: string): Promise<void> {
    await this.change(threadId, operation, (current) => {
      if (!current) return { result: undefined };
      const next = stateOf(current);
      for (const field of STATUS_FIELDS) delete next[field];
      return { next, result: undefined };
    });
  }
}

/**
 * Refuses a removal's status (see {@link ManyWorkers.replaceStatus}) that could not be stored, before
 * anything is removed: `InvalidConfigError` naming the field.
 */
export function checkRemovalStatus(status: { checkpointId: string; write: ThreadStatusWrite }): void {
  if (!(THREAD_STATES as readonly unknown[]).includes(status.write.state)) {
    throw new InvalidConfigError("state", `${STORE}: a thread status's state must be one of ${THREAD_STATES.join(", ")}, got ${JSON.stringify(status.write.state)}.`);
  }
  statusFields(putRecord(status.write, status.checkpointId));
}

function lostError(threadId: string, fence: LeaseFence, doc: LeaseDoc | undefined, operation: string): LeaseLostError {
  return new LeaseLostError(threadId, fence.token, doc?.token !== undefined ? { token: doc.token, holder: doc.released ? null : (doc.worker ?? null) } : {}, operation);
}

/** The state an entry holds, to carry into the next one. */
function stateOf(doc: LeaseDoc | undefined): RegisterState {
  const state: RegisterState = {};
  if (!doc) return state;
  for (const field of STATE_FIELDS) if (doc[field] !== undefined) (state as Record<string, unknown>)[field] = doc[field];
  return state;
}

function clean(state: RegisterState): RegisterState {
  return Object.fromEntries(Object.entries(state).filter(([, v]) => v !== undefined)) as RegisterState;
}

/** The record a root checkpoint's put leaves (attempts 0, the rest from the write). */
function putRecord(write: ThreadStatusWrite, checkpointId: string): ThreadStatusRecord {
  const record: ThreadStatusRecord = { threadId: "", state: write.state, checkpointId, updatedAt: write.updatedAt, attempts: 0 };
  if (write.error !== undefined) record.error = write.error;
  if (write.interrupts !== undefined && Object.keys(write.interrupts).length > 0) record.interrupts = write.interrupts;
  return record;
}

/** A record as entry fields, every status field set (`undefined` for the absent ones, dropped on insert). */
function statusFields(record: ThreadStatusRecord): RegisterState {
  if (!Number.isSafeInteger(record.updatedAt) || record.updatedAt < 0) {
    throw new InvalidConfigError("updatedAt", `${STORE}: a thread status's updatedAt must be a non-negative integer of milliseconds, got ${String(record.updatedAt)}.`);
  }
  const interrupts = record.interrupts !== undefined && Object.keys(record.interrupts).length > 0 ? JSON.stringify(record.interrupts) : undefined;
  return {
    state: record.state,
    checkpoint_id: record.checkpointId,
    updated_at: record.updatedAt,
    attempts: record.attempts,
    error: record.error,
    interrupts,
    attempted_at: record.attemptedAt,
  } as RegisterState;
}

function statusOf(doc: LeaseDoc): ThreadStatusRecord | undefined {
  if (doc.state === undefined || doc.checkpoint_id === undefined) return undefined;
  const record: ThreadStatusRecord = { threadId: doc.thread_id, state: doc.state, checkpointId: doc.checkpoint_id, updatedAt: doc.updated_at ?? 0, attempts: doc.attempts ?? 0 };
  if (typeof doc.error === "string") record.error = doc.error;
  if (typeof doc.interrupts === "string") record.interrupts = JSON.parse(doc.interrupts) as Record<string, unknown>;
  if (typeof doc.attempted_at === "number") record.attemptedAt = doc.attempted_at;
  return record;
}

function checkLeaseArgs(workerId: string, ttlMs: number): void {
  if (typeof workerId !== "string" || workerId === "") throw new InvalidConfigError("workerId", `${STORE}: a lease needs a non-empty workerId, got ${JSON.stringify(workerId)}.`);
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new InvalidConfigError("ttlMs", `${STORE}: a lease's ttlMs must be a positive integer, got ${String(ttlMs)}.`);
}
