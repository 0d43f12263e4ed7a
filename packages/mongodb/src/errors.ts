/**
 * Errors specific to MongoDB, and the checks that turn the driver's errors into typed ones.
 *
 * @module
 */
import {
  ID_RULES,
  InvalidConfigError,
  ResumableError,
  StoreBusyError,
  StoreTimeoutError,
  checkIdentifier,
  type IdentifierRule,
} from "@resumable/core";

/**
 * The MongoDB server could not be reached, or dropped the connection, during an operation. The driver
 * reconnects on its own once the server answers again; every store operation is safe to retry
 * (checkpoints are upserts; blobs, chunks and writes are keyed by unique indexes).
 */
export class MongoUnavailableError extends ResumableError {
  /** The store operation that failed (`"putCheckpoint"`...). */
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    super(
      "STORE_UNAVAILABLE",
      `MongoDB was unreachable during ${operation} (${describeCause(cause)}). ` +
        `If this was a write, it may or may not have been applied; retrying it is safe. ` +
        `The driver reconnects by itself once the server answers again; check the URL and that the server is up.`,
      { cause },
    );
    this.operation = operation;
  }
}

/**
 * A write reached a thread whose TTL expired while another process was deleting it (see
 * `MongoDBStore.deleteExpiredThreads`). Nothing of the write was stored; retried once the deletion is
 * done (a second or so), it starts the thread anew. A `StoreBusyError`, so code that retries those
 * retries this too.
 */
export class MongoThreadExpiringError extends StoreBusyError {
  readonly threadId: string;
  constructor(threadId: string) {
    super("MongoDBStore", 0);
    this.message =
      `MongoDBStore: thread ${JSON.stringify(threadId)} expired (ttlSeconds) and another process is deleting it right now. ` +
      `Nothing of this write was stored; retry it in a moment, and it starts the thread anew.`;
    this.threadId = threadId;
  }
}

/** Driver error classes that mean the server was not reachable (by name, so no driver import is needed). */
const UNAVAILABLE = new Set([
  "MongoNetworkError",
  "MongoNetworkTimeoutError",
  "MongoServerSelectionError",
  "MongoTopologyClosedError",
  "MongoNotConnectedError",
  "MongoPoolClearedError",
  "MongoServerClosedError",
]);

function describeCause(cause: unknown): string {
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

/** Turns an error from the driver into one of this project's typed errors where one applies. */
export function translateError(error: unknown, operation: string, store: string): unknown {
  if (error instanceof ResumableError || !(error instanceof Error)) return error;
  const code = (error as { code?: unknown }).code;
  // The client-side timeout (the driver's timeoutMS) only stops waiting: the server may still apply a write.
  if (error.name === "MongoOperationTimeoutError") {
    return new StoreTimeoutError(store, operation, "unknown", `the driver's timeoutMS expired: "${error.message}"`, error);
  }
  // MaxTimeMSExpired: the server stopped the command, but a multi-document write may have applied part of it.
  if (code === 50) return new StoreTimeoutError(store, operation, "unknown", `the server's time limit expired: "${error.message}"`, error);
  if (UNAVAILABLE.has(error.name)) return new MongoUnavailableError(operation, error);
  return error;
}

/** Whether a failed insert failed only because some documents already existed (E11000). */
export function onlyDuplicateKeys(error: unknown): boolean {
  const e = error as { code?: unknown; writeErrors?: unknown; writeConcernError?: unknown; errorResponse?: { writeConcernError?: unknown } };
  if (e?.writeConcernError || e?.errorResponse?.writeConcernError) return false;
  const writeErrors = e?.writeErrors === undefined ? [] : Array.isArray(e.writeErrors) ? e.writeErrors : [e.writeErrors];
  if (writeErrors.length > 0) return writeErrors.every((w) => (w as { code?: unknown }).code === 11000);
  return e?.code === 11000;
}

/** Which of core's id rules a field of a store call falls under. */
function ruleFor(field: string): IdentifierRule {
  if (field === "thread_id") return ID_RULES.threadId;
  if (field === "checkpoint_ns") return ID_RULES.checkpointNs;
  if (field === "task id") return ID_RULES.taskId;
  if (field === "task path") return ID_RULES.taskPath;
  if (field.startsWith("channel name")) return ID_RULES.channel;
  if (field.includes("version")) return ID_RULES.version;
  return ID_RULES.checkpointId;
}

/**
 * Refuses an id that breaks core's id rule (see `ID_LIMITS` in `@resumable/core`), and anything that is
 * not a string: ids go into queries only as string values, never as documents, so `{ "$ne": null }` as a
 * thread id is refused here rather than read as an operator. The saver checks the same before any store
 * call; this guards callers who use the store directly.
 */
export function checkId(field: string, value: unknown): string {
  return checkIdentifier(value, { ...ruleFor(field), field }, "MongoDBStore");
}

/**
 * Checks a database name: MongoDB refuses `/\. "$`, NUL and names of 64 bytes or more; FerretDB also
 * refuses anything outside `[A-Za-z0-9_-]`.
 */
export function checkDatabaseName(name: unknown): string {
  if (typeof name !== "string" || name === "" || /[/\\. "$\u0000]/.test(name) || Buffer.byteLength(name, "utf8") > 63) {
    throw new InvalidConfigError(
      "dbName",
      `MongoDBStore: "dbName" must be a non-empty database name of at most 63 bytes without / \\ . " $, spaces or NUL (got ${JSON.stringify(name)}).`,
    );
  }
  return name;
}

/** Checks the prefix of the collection names: letters, digits, `_` and `-` (what MongoDB and FerretDB both accept). */
export function checkCollectionPrefix(prefix: unknown): string {
  if (typeof prefix !== "string" || !/^[A-Za-z0-9_-]{0,40}$/.test(prefix) || prefix.startsWith("system")) {
    throw new InvalidConfigError(
      "collectionPrefix",
      `MongoDBStore: "collectionPrefix" must be at most 40 letters, digits, "_" or "-", not starting with "system" (got ${JSON.stringify(prefix)}).`,
    );
  }
  return prefix;
}
