/**
 * Errors specific to PostgreSQL, and the checks that turn pg's errors into typed ones.
 *
 * @module
 */
import {
  ID_RULES,
  InvalidConfigError,
  ResumableError,
  StoreNotSetUpError,
  StoreTimeoutError,
  checkIdentifier,
  type IdentifierRule,
} from "@resumable/core";

/**
 * The PostgreSQL server could not be reached, or dropped the connection, during an operation. The
 * pool reconnects on its own once the server is back; every store operation is safe to retry
 * (checkpoints are upserts, blobs, chunks and writes are keyed).
 */
export class PostgresUnavailableError extends ResumableError {
  /** The store operation that failed (`"putCheckpoint"`...). */
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    super(
      "STORE_UNAVAILABLE",
      `PostgreSQL was unreachable during ${operation} (${describeCause(cause)}). ` +
        `If this was a write, it may or may not have been committed; retrying it is safe. ` +
        `The pool reconnects by itself once the server answers again.`,
      { cause },
    );
    this.operation = operation;
  }
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, recovering)
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}

/** Turns an error from pg into one of this project's typed errors where one applies. */
export function translateError(error: unknown, operation: string, store: string): unknown {
  if (error instanceof ResumableError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : "";
  if (code === "42P01" || code === "3F000") {
    return new StoreNotSetUpError(store, `${operation} failed with "${message}"`, { cause: error });
  }
  // Server-side timeouts cancel the statement, and with it its transaction: nothing was applied.
  if (code === "55P03") return new StoreTimeoutError(store, operation, "not-applied", `a lock was held longer than lock_timeout: "${message}"`, error);
  if (code === "57014") return new StoreTimeoutError(store, operation, "not-applied", `the server cancelled the statement: "${message}"`, error);
  // pg's client-side query_timeout only stops waiting: the server may still commit the write.
  if (/Query read timeout/i.test(message)) {
    return new StoreTimeoutError(store, operation, "unknown", `pg's client-side query_timeout expired: "${message}"`, error);
  }
  if (
    (typeof code === "string" && CONNECTION_CODES.has(code)) ||
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(message)
  ) {
    return new PostgresUnavailableError(operation, error);
  }
  return error;
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
 * Refuses an id that breaks core's id rule (see `ID_LIMITS` in `@resumable/core`): PostgreSQL's text
 * cannot hold NUL, its UTF-8 cannot hold a lone surrogate (pg would silently store U+FFFD), and the
 * limits keep every primary key within one btree entry. The saver checks the same before any store
 * call; this guards callers who use the store directly.
 */
export function checkId(field: string, value: string): void {
  checkIdentifier(value, { ...ruleFor(field), field }, "PostgresStore");
}

/** Quotes an SQL identifier (a schema name), refusing what PostgreSQL would change or reject. */
export function quoteIdentifier(name: string, option: string): string {
  if (typeof name !== "string" || name === "" || name.includes("\u0000") || Buffer.byteLength(name, "utf8") > 63) {
    throw new InvalidConfigError(
      option,
      `"${option}" must be a non-empty identifier of at most 63 bytes without NUL (got ${JSON.stringify(name)}); ` +
        `PostgreSQL would truncate or refuse it.`,
    );
  }
  return `"${name.replace(/"/g, '""')}"`;
}
