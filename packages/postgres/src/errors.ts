/**
 * Errors specific to PostgreSQL, and the checks that turn pg's errors into typed ones.
 *
 * @module
 */
import { InvalidConfigError, ResumableError, StoreNotSetUpError } from "@resumable/core";

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
  if (
    (typeof code === "string" && CONNECTION_CODES.has(code)) ||
    /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|not queryable/i.test(message)
  ) {
    return new PostgresUnavailableError(operation, error);
  }
  return error;
}

/**
 * PostgreSQL's text columns reject NUL, its UTF-8 cannot hold a lone surrogate (pg would silently
 * turn one into U+FFFD, so a different id would come back), and a btree key must fit in about 2.7 KB.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Longest id, in UTF-8 bytes: four ids together must fit one btree index entry (2704 bytes). */
export const MAX_ID_BYTES = 640;

/** Refuses an id PostgreSQL cannot store exactly, naming the field and the reason. */
export function checkId(field: string, value: string): void {
  if (value.includes("\u0000")) {
    throw new InvalidConfigError(
      field,
      `${field} contains a NUL character (\\u0000), which PostgreSQL text cannot store. Use ids without NUL.`,
    );
  }
  if (LONE_SURROGATE.test(value)) {
    throw new InvalidConfigError(
      field,
      `${field} contains a lone UTF-16 surrogate, which is not valid Unicode and would not round-trip through ` +
        `PostgreSQL. Use well-formed strings as ids.`,
    );
  }
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_ID_BYTES) {
    throw new InvalidConfigError(
      field,
      `${field} is ${bytes} bytes in UTF-8, over the PostgreSQL store's limit of ${MAX_ID_BYTES} bytes ` +
        `(ids are index keys). Use a shorter id, e.g. a hash of the long one.`,
    );
  }
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
