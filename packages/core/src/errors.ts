/**
 * Typed errors. Each message says what was wrong, where, and what to do about it.
 *
 * @module
 */

/** Base class of every error this project throws; `code` is stable across releases. */
export class ResumableError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The config passed to the saver lacks something it needs, or holds something unusable. */
export class InvalidConfigError extends ResumableError {
  /** The `configurable` key at fault, e.g. `"thread_id"`. */
  readonly field: string;
  constructor(field: string, message: string) {
    super("INVALID_CONFIG", message);
    this.field = field;
  }
}

/** Thrown when `configurable.thread_id` is missing. */
export class MissingThreadIdError extends InvalidConfigError {
  constructor(operation: string) {
    super(
      "thread_id",
      `${operation}: the config has no "configurable.thread_id". A checkpointer stores state per thread; ` +
        `pass one, e.g. graph.invoke(input, { configurable: { thread_id: "order-42" } }).`,
    );
  }
}

/** A value could not be serialized (or deserialized) by the saver's serializer. */
export class SerializationError extends ResumableError {
  /** Where the value was going: `channel "messages"`, `metadata`, `write "x" of task ...`. */
  readonly target: string;
  /** Path inside the value to the part at fault, when known (e.g. `$.items[3].callback`). */
  readonly path: string | undefined;
  constructor(target: string, reason: string, path?: string, cause?: unknown) {
    super(
      "SERIALIZATION",
      `Cannot serialize ${target}${path ? ` at ${path}` : ""}: ${reason}. ` +
        `Checkpointed state must be data (JSON values, Uint8Array, Map, Set, LangChain messages; a Date comes back as its ISO string); ` +
        `keep functions, class instances with behaviour, sockets and clients out of graph state.`,
      { cause },
    );
    this.target = target;
    this.path = path;
  }
}

/** A value is larger than a limit (of the store, or one set on the saver). */
export class ValueTooLargeError extends ResumableError {
  readonly target: string;
  readonly sizeBytes: number;
  readonly limitBytes: number;
  constructor(target: string, sizeBytes: number, limitBytes: number, hint: string) {
    super(
      "VALUE_TOO_LARGE",
      `${target} is ${formatBytes(sizeBytes)} serialized, over the limit of ${formatBytes(limitBytes)}. ${hint}`,
    );
    this.target = target;
    this.sizeBytes = sizeBytes;
    this.limitBytes = limitBytes;
  }
}

/** The store's tables or indexes do not exist yet, or are from a newer version of this package. */
export class StoreNotSetUpError extends ResumableError {
  constructor(store: string, detail: string, options?: { cause?: unknown }) {
    super(
      "STORE_NOT_SET_UP",
      `${store} is not set up: ${detail}. Call \`await saver.setup()\` (or \`store.setup()\`) once before ` +
        `using it; it is idempotent and safe to run from several processes.`,
      options,
    );
  }
}

/** Stored data is not what it should be (a missing chunk, a hash mismatch, an unknown record). */
export class CorruptRecordError extends ResumableError {
  constructor(detail: string) {
    super("CORRUPT_RECORD", `Stored checkpoint data is inconsistent: ${detail}.`);
  }
}

/** The store was used after `close()`. */
export class StoreClosedError extends ResumableError {
  constructor(store: string) {
    super("STORE_CLOSED", `${store} was closed; create a new one to keep working.`);
  }
}

/**
 * The store could not get a lock it needs (another connection or process held it) within its
 * configured wait. Nothing of the call was applied, so retrying it is safe.
 */
export class StoreBusyError extends ResumableError {
  /** How long the store waited, in milliseconds. */
  readonly waitedMs: number;
  constructor(store: string, waitedMs: number, cause?: unknown) {
    super(
      "STORE_BUSY",
      `${store} could not get the database's write lock within ${waitedMs} ms: another connection or process held it ` +
        `the whole time. Nothing was written, so retrying is safe. Raise the store's \`busyTimeoutMs\`, or keep other ` +
        `writers' transactions short.`,
      { cause },
    );
    this.waitedMs = waitedMs;
  }
}

/** The store can only read: its database, file or connection refuses writes. */
export class StoreReadOnlyError extends ResumableError {
  constructor(store: string, detail: string, options?: { cause?: unknown }) {
    super("STORE_READ_ONLY", `${store} cannot write: ${detail}.`, options);
  }
}

/**
 * A database call took longer than a timeout. `outcome` says what is known of a write: `"not-applied"`
 * when the database cancelled it (retrying is safe), `"unknown"` when only the client stopped waiting
 * and the database may still apply it.
 */
export class StoreTimeoutError extends ResumableError {
  /** The store operation that timed out (`"putCheckpoint"`...). */
  readonly operation: string;
  readonly outcome: "not-applied" | "unknown";
  constructor(store: string, operation: string, outcome: "not-applied" | "unknown", detail: string, cause?: unknown) {
    super(
      "STORE_TIMEOUT",
      `${store}: ${operation} timed out (${detail}). ` +
        (outcome === "not-applied"
          ? `The database cancelled it, so nothing of it was stored; retrying is safe.`
          : `Only the client stopped waiting: the database may still have applied it, or may apply it later. Its outcome is unknown; ` +
            `read the thread back before deciding, and prefer a server-side timeout (statement_timeout, lock_timeout), whose outcome is known.`),
      { cause },
    );
    this.operation = operation;
    this.outcome = outcome;
  }
}

/**
 * A write, renewal or status change fenced by a lease was refused: the thread's lease no longer carries
 * this worker's token (another worker claimed the thread after the lease expired) or was released.
 * Nothing of the refused call became visible. The worker must stop working on the thread: what it
 * computes from now on would be discarded. Another worker holds the thread, or may claim it.
 */
export class LeaseLostError extends ResumableError {
  readonly threadId: string;
  /** The token the refused call carried. */
  readonly token: number;
  /** The thread's current token, when the store knows it cheaply. */
  readonly currentToken: number | undefined;
  /** The current holder, when the store knows it (absent when the lease was released). */
  readonly holder: string | undefined;
  constructor(threadId: string, token: number, current?: { token?: number; holder?: string | null }, operation = "write") {
    const currentToken = current?.token;
    const holder = current?.holder ?? undefined;
    let what: string;
    if (current === undefined) what = "the lease is no longer current";
    else if (currentToken === undefined) what = "the thread has never been claimed";
    else if (currentToken !== token) what = `another worker took the thread over (token ${currentToken}${holder ? `, held by ${JSON.stringify(holder)}` : ""})`;
    else what = "the lease was released";
    super(
      "LEASE_LOST",
      `Thread ${JSON.stringify(threadId)}: ${operation} refused, lease token ${token} is no longer valid: ${what}. ` +
        `Nothing of this ${operation} was stored. Stop working on this thread; claim it again (claimLease) before resuming it.`,
    );
    this.threadId = threadId;
    this.token = token;
    this.currentToken = currentToken;
    this.holder = holder;
  }

  /**
   * `error instanceof LeaseLostError` holds for a `LeaseLostError` of any copy of `@resumable/core`:
   * a store loaded through a TypeScript loader, or from CommonJS, may get core's other build, and the
   * saver and the recovery runner must still recognise its refusals (by `name` and `code`).
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    return this === LeaseLostError && value instanceof Error && value.name === "LeaseLostError" && (value as { code?: unknown }).code === "LEASE_LOST";
  }
}

/** A feature needs a store capability the store does not declare (leases, thread status...). */
export class CapabilityMissingError extends ResumableError {
  /** The missing capability, e.g. `"leases"`. */
  readonly capability: string;
  constructor(store: string, capability: string, operation: string, why?: string) {
    super(
      "CAPABILITY_MISSING",
      `${operation} needs a store with capabilities.${capability}, and ${store} does not declare it${why ? ` (${why})` : ""}. ` +
        `Use a backend that supports it (MemoryStore, SqliteStore and PostgresStore do), or leave the feature off.`,
    );
    this.capability = capability;
  }
}

/**
 * `copyThread` was asked to copy into a thread that already has checkpoints of its own. Nothing was
 * written. Pick an unused thread id, or `deleteThread` the target first. (A target that holds only
 * checkpoints of the source, left by a copy cut short, is completed instead.)
 */
export class CopyTargetNotEmptyError extends ResumableError {
  /** The target thread. */
  readonly threadId: string;
  /** How many of the target's checkpoints the source does not have. */
  readonly foreignCheckpoints: number;
  constructor(threadId: string, sourceThreadId: string, foreignCheckpoints: number) {
    super(
      "COPY_TARGET_NOT_EMPTY",
      `copyThread(${JSON.stringify(sourceThreadId)}, ${JSON.stringify(threadId)}): the target thread already has ` +
        `${foreignCheckpoints} checkpoint(s) that are not copies of the source, so copying would mix two histories. ` +
        `Nothing was written. Copy to an unused thread id, or deleteThread(${JSON.stringify(threadId)}) first.`,
    );
    this.threadId = threadId;
    this.foreignCheckpoints = foreignCheckpoints;
  }
}

/** Formats a byte count for messages: `512 B`, `3.2 KB`, `5.0 MB`. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "unlimited";
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}
