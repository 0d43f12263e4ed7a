/**
 * Many workers (the `manyWorkers` option): a lease item and a status item per thread, in the thread's
 * own partition, and the sparse global secondary index `listThreads` pages through.
 *
 * | item   | `pk`      | `sk` | attributes                                                                 |
 * | ------ | --------- | ---- | -------------------------------------------------------------------------- |
 * | lease  | thread id | `l|` | `tk` token, `wk` worker, `ex` expiry (ms), `rl` released                    |
 * | status | thread id | `s|` | `st` state, `ci` checkpoint id, `ua` updatedAt, `er` error, `ir` interrupts (JSON), `at` attempts, `aa` attemptedAt, `rv` revision, `gs` + `gu` (the index's keys) |
 *
 * The lease item never carries the TTL attribute and `deleteThread` keeps it, so a thread's tokens
 * only grow. The status item is the only item with `gs` and `gu`, so the index holds nothing else:
 * `gs` is the state, `gu` is `updatedAt` as 16 digits, `#`, and the thread id, so one index Query
 * per state reads threads in the order `(updatedAt, threadId)`.
 *
 * @module
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, type LeaseState, type ThreadState, type ThreadStatusRecord } from "@resumable/core";

import type { Item } from "./item-size.js";
import { LEASE_KEY, PK, SK, STATUS_KEY } from "./keys.js";

/** The global secondary index of status items (created by `setup()` with `manyWorkers`). */
export const STATUS_INDEX = "threads-by-status";
/** The index's partition key: the thread's state. */
export const STATUS_INDEX_PK = "gs";
/** The index's sort key: `updatedAt` (16 digits), `#`, thread id. */
export const STATUS_INDEX_SK = "gu";

/** Attribute names of lease and status items (a TTL attribute must be another). */
export const MANY_WORKERS_ATTRIBUTES = ["tk", "wk", "ex", "rl", "st", "ci", "ua", "er", "ir", "at", "aa", "rv", STATUS_INDEX_PK, STATUS_INDEX_SK] as const;

const s = (value: string): AttributeValue => ({ S: value });
const n = (value: number): AttributeValue => ({ N: String(value) });

/** The index sort key of a status: equal times order by thread id. */
export function statusIndexKey(updatedAt: number, threadId: string): string {
  return `${timeKey(updatedAt)}#${threadId}`;
}

/** `updatedAt` as 16 digits, so that string order is numeric order. */
export function timeKey(updatedAt: number): string {
  if (!Number.isSafeInteger(updatedAt) || updatedAt < 0) {
    throw new InvalidConfigError("updatedAt", `DynamoDBStore: a thread status's updatedAt must be a non-negative integer of milliseconds, got ${String(updatedAt)}.`);
  }
  return String(updatedAt).padStart(16, "0");
}

export const leaseKey = (threadId: string): Item => ({ [PK]: s(threadId), [SK]: s(LEASE_KEY) });
export const statusKey = (threadId: string): Item => ({ [PK]: s(threadId), [SK]: s(STATUS_KEY) });

/** A lease item as {@link LeaseState}. */
export function readLease(threadId: string, item: Item): LeaseState {
  return { threadId, workerId: item["wk"]?.S ?? "", token: Number(item["tk"]?.N ?? 0), expiresAt: Number(item["ex"]?.N ?? 0), released: item["rl"]?.BOOL === true };
}

/** A status item. `revision` changes on every write, so a read-modify-write can be conditional on it. */
export function statusItem(record: ThreadStatusRecord, extra: Item, revision: string): Item {
  const item: Item = {
    ...statusKey(record.threadId),
    st: s(record.state),
    ci: s(record.checkpointId),
    ua: n(record.updatedAt),
    at: n(record.attempts),
    rv: s(revision),
    [STATUS_INDEX_PK]: s(record.state),
    [STATUS_INDEX_SK]: s(statusIndexKey(record.updatedAt, record.threadId)),
    ...extra,
  };
  if (record.error !== undefined) item["er"] = s(record.error);
  if (record.interrupts !== undefined && Object.keys(record.interrupts).length > 0) item["ir"] = s(JSON.stringify(record.interrupts));
  if (record.attemptedAt !== undefined) item["aa"] = n(record.attemptedAt);
  return item;
}

/** A status item as a record. */
export function readStatus(item: Item): ThreadStatusRecord {
  const record: ThreadStatusRecord = {
    threadId: item[PK]!.S!,
    state: item["st"]!.S! as ThreadState,
    checkpointId: item["ci"]!.S!,
    updatedAt: Number(item["ua"]!.N!),
    attempts: Number(item["at"]?.N ?? 0),
  };
  if (item["er"]?.S !== undefined) record.error = item["er"].S;
  if (item["ir"]?.S !== undefined) record.interrupts = JSON.parse(item["ir"].S) as Record<string, unknown>;
  if (item["aa"]?.N !== undefined) record.attemptedAt = Number(item["aa"].N);
  return record;
}
