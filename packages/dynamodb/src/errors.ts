/**
 * Errors specific to DynamoDB, and the translation of the SDK's errors into typed ones.
 *
 * @module
 */
import { InvalidConfigError, ResumableError, StoreNotSetUpError, StoreTimeoutError } from "@resumable/core";

/**
 * DynamoDB kept refusing a request for capacity (`ProvisionedThroughputExceededException`,
 * `ThrottlingException`, `RequestLimitExceeded`) or kept leaving items of a batch unprocessed, through
 * every retry. Nothing is torn: a checkpoint becomes visible only with its last write, and every write
 * is safe to retry.
 */
export class DynamoDBThrottledError extends ResumableError {
  /** The store operation that gave up (`"putCheckpoint"`...). */
  readonly operation: string;
  /** Attempts made, the first included. */
  readonly attempts: number;
  constructor(table: string, operation: string, attempts: number, detail: string, cause?: unknown) {
    super(
      "STORE_THROTTLED",
      `DynamoDB throttled ${operation} on table "${table}" through ${attempts} attempts (${detail}). ` +
        `Nothing was left half-visible and retrying is safe. Give the table more capacity (on-demand billing, ` +
        `or higher provisioned units / auto scaling), or raise the store's \`retry.maxAttempts\`.`,
      { cause },
    );
    this.operation = operation;
    this.attempts = attempts;
  }
}

/**
 * DynamoDB could not be reached, or the connection failed mid-request. A write may or may not have
 * been applied; every store operation is safe to retry.
 */
export class DynamoDBUnavailableError extends ResumableError {
  readonly operation: string;
  constructor(endpoint: string, operation: string, cause: unknown) {
    super(
      "STORE_UNAVAILABLE",
      `DynamoDB (${endpoint}) was unreachable during ${operation} (${describe(cause)}). ` +
        `If this was a write, it may or may not have been applied; retrying it is safe. Check the endpoint, ` +
        `region, network and credentials of the client.`,
      { cause },
    );
    this.operation = operation;
  }
}

/**
 * DynamoDB cancelled a transaction (`TransactWriteItems`, used with `manyWorkers`) for a reason other
 * than the thread's lease (that is {@link LeaseLostError} from `@resumable/core`): a conflict with
 * another transaction or throttling that outlasted the retries, a validation error, an item too large.
 * Nothing of the transaction was written; parts written before it (blobs, chunks, batch writes) stay
 * invisible, as after a crash. Retrying the call is safe.
 */
export class DynamoDBTransactionError extends ResumableError {
  /** The store operation (`"putCheckpoint"`...). */
  readonly operation: string;
  /** DynamoDB's cancellation reason codes, one per action of the transaction (`"None"` for those that were fine). */
  readonly reasons: string[];
  constructor(table: string, operation: string, reasons: string[], cause?: unknown) {
    super(
      "STORE_TRANSACTION_CANCELLED",
      `DynamoDB cancelled the transaction of ${operation} on table "${table}" (reasons per action: ${reasons.join(", ") || "none given"}). ` +
        `Nothing of it was written and retrying is safe. TransactionConflict or throttling that persists means heavy contention on one thread ` +
        `or too little capacity; a ValidationException means the request is beyond DynamoDB's transaction limits (100 actions, 4 MB).`,
      { cause },
    );
    this.operation = operation;
    this.reasons = reasons;
  }
}

/** Error names DynamoDB uses for throttling and transient server faults: retried with backoff. */
export const RETRYABLE_ERRORS = new Set([
  "ProvisionedThroughputExceededException",
  "ThrottlingException",
  "RequestLimitExceeded",
  "InternalServerError",
  "ServiceUnavailable",
  "ServiceUnavailableException",
]);

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH"]);

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return `${cause.name}${typeof code === "string" ? ` ${code}` : ""}: ${cause.message}`;
  }
  return String(cause);
}

/** The name of an SDK error (`ResourceNotFoundException`...), or `undefined`. */
export function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

/** Turns an SDK error into one of this project's typed errors where one applies. */
export function translateError(error: unknown, where: { store: string; table: string; endpoint: string; operation: string }): unknown {
  if (error instanceof ResumableError || !(error instanceof Error)) return error;
  const { store, table, operation } = where;
  const message = error.message;
  if (error.name === "ResourceNotFoundException") {
    return new StoreNotSetUpError(
      store,
      `table "${table}" does not exist (${operation}: "${message}"). Create it with \`createTable: true\` or from the definition in the README`,
      { cause: error },
    );
  }
  if (error.name === "ValidationException" && /key element does not match the schema|Missing the key|key schema/i.test(message)) {
    return new StoreNotSetUpError(store, `table "${table}" has another key schema than this store's (pk: S, sk: S): "${message}"`, { cause: error });
  }
  if (error.name === "ValidationException" && /item size|Item size has exceeded|size.*exceed/i.test(message)) {
    return new InvalidConfigError(
      "maxItemBytes",
      `${store}: DynamoDB refused an item of ${operation} as too large ("${message}"): the store's \`maxItemBytes\` is more than ` +
        `this endpoint accepts. Lower it (the default, 400,000 bytes, fits AWS, dynalite and moto).`,
    );
  }
  if (error.name === "TimeoutError" || error.name === "AbortError" || error.name === "RequestTimeout") {
    return new StoreTimeoutError(store, operation, "unknown", `the client stopped waiting: "${message}"`, error);
  }
  const code = (error as { code?: unknown }).code;
  if ((typeof code === "string" && NETWORK_CODES.has(code)) || /socket hang up|ECONNREFUSED|getaddrinfo|connect ECONN/i.test(message)) {
    return new DynamoDBUnavailableError(where.endpoint, operation, error);
  }
  return error;
}
