/**
 * Errors specific to Redis, and the translation of ioredis's errors into typed ones.
 *
 * @module
 */
import { ResumableError, StoreReadOnlyError, StoreTimeoutError } from "@resumable/core";

/**
 * Redis could not be reached, dropped the connection, or is not serving yet (loading its dataset,
 * cluster down) during an operation. ioredis reconnects on its own; every store operation is safe
 * to retry (checkpoints are upserts, blobs, chunks and writes are keyed, and each call is one
 * atomic script).
 */
export class RedisUnavailableError extends ResumableError {
  /** The store operation that failed (`"putCheckpoint"`...). */
  readonly operation: string;
  constructor(operation: string, cause: unknown) {
    super(
      "STORE_UNAVAILABLE",
      `Redis was unreachable during ${operation} (${describeCause(cause)}). ` +
        `If this was a write, it may or may not have been applied (each call is one atomic script: all of it or none); retrying it is safe. ` +
        `ioredis reconnects by itself once the server answers again.`,
      { cause },
    );
    this.operation = operation;
  }
}

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
const UNAVAILABLE_MESSAGES =
  /Connection is closed|Reached the max retries per request|Stream isn't writeable|enableOfflineQueue|None of startup nodes is available|Cluster isn't ready|Failed to refresh slots cache|^LOADING |^MASTERDOWN |^CLUSTERDOWN |^TRYAGAIN |Too many Cluster redirections/;

function describeCause(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === "string" && !cause.message.includes(code) ? `${code}: ${cause.message}` : cause.message;
  }
  return String(cause);
}

/** Turns an error from ioredis into one of this project's typed errors where one applies. */
export function translateError(error: unknown, operation: string, store: string): unknown {
  if (error instanceof ResumableError) return error;
  const code = (error as { code?: unknown } | undefined)?.code;
  const message = error instanceof Error ? error.message : String(error);
  // ioredis's commandTimeout only stops waiting: the script may still run on the server.
  if (/Command timed out/i.test(message)) {
    return new StoreTimeoutError(store, operation, "unknown", `ioredis's commandTimeout expired: "${message}"`, error);
  }
  if ((typeof code === "string" && CONNECTION_CODES.has(code)) || UNAVAILABLE_MESSAGES.test(message) || error?.constructor?.name === "ClusterAllFailedError") {
    return new RedisUnavailableError(operation, error);
  }
  if (/^READONLY /.test(message)) {
    return new StoreReadOnlyError(store, `${operation} reached a read-only replica ("${message}"); connect to the primary`, { cause: error });
  }
  if (/^OOM /.test(message)) {
    return new StoreReadOnlyError(
      store,
      `Redis refused ${operation}: it is at its maxmemory ("${message}"). Nothing of the call was applied; raise maxmemory or delete threads`,
      { cause: error },
    );
  }
  return error;
}
