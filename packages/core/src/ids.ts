/**
 * One rule for every id a store keys by, checked by the saver before any store sees it, so that
 * every backend accepts and refuses the same ids: strings of well-formed Unicode without NUL (SQL
 * text, BSON and DynamoDB strings cannot all hold NUL or lone surrogates exactly), within limits
 * that fit every backend's key size (a PostgreSQL btree entry, a DynamoDB sort key, a Redis key).
 *
 * @module
 */
import { InvalidConfigError } from "./errors.js";

/** The longest ids, in UTF-8 bytes. The same on every store; the conformance suite checks them. */
export const ID_LIMITS = Object.freeze({
  /** `configurable.thread_id`. */
  threadIdBytes: 512,
  /** `configurable.checkpoint_ns` (subgraph namespaces: about 40 bytes per level). */
  checkpointNsBytes: 512,
  /** Checkpoint ids (LangGraph's are 36-character uuid6). */
  checkpointIdBytes: 256,
  /** Task ids of pending writes (LangGraph's are 36-character uuid5). */
  taskIdBytes: 256,
  /** Channel names. */
  channelBytes: 256,
  /** Channel versions. */
  versionBytes: 256,
  /** A task's path: not a key, but stored as text beside the write. */
  taskPathBytes: 16_384,
});

/** What {@link checkIdentifier} is checking, for messages: its name and its limit. */
export interface IdentifierRule {
  /** The field, as users know it: `"thread_id"`, `"checkpoint_ns"`, `"taskPath"`... */
  field: string;
  maxBytes: number;
  /** Whether `""` is a valid value (a namespace and a task path may be empty; a thread id may not). */
  allowEmpty?: boolean;
}

/**
 * Refuses an id that some store could not keep exactly: not a string, empty (where not allowed),
 * containing NUL or a lone UTF-16 surrogate, or longer than its limit. The message names the
 * operation, the field, what was wrong and what to do.
 */
export function checkIdentifier(value: unknown, rule: IdentifierRule, operation: string): string {
  const { field, maxBytes } = rule;
  if (typeof value !== "string") {
    throw new InvalidConfigError(field, `${operation}: ${field} must be a string, got ${value === null ? "null" : typeof value}.`);
  }
  if (value === "" && !rule.allowEmpty) {
    throw new InvalidConfigError(field, `${operation}: ${field} is an empty string; give it a non-empty value.`);
  }
  // A UTF-16 code unit takes at most 3 bytes in UTF-8, so short ids skip the byte count.
  if (value.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > maxBytes) {
      throw new InvalidConfigError(
        field,
        `${operation}: ${field} is ${bytes} bytes in UTF-8, over the limit of ${maxBytes} bytes that every store keeps. ` +
          `Use a shorter id, for example a hash of the long one.`,
      );
    }
  }
  if (value.includes("\u0000")) {
    throw new InvalidConfigError(field, `${operation}: ${field} contains a NUL character (\\u0000), which not every database can store in a key. Use ids without NUL.`);
  }
  if (!(value as string & { isWellFormed(): boolean }).isWellFormed()) {
    throw new InvalidConfigError(
      field,
      `${operation}: ${field} contains a lone UTF-16 surrogate, which is not valid Unicode: databases would store U+FFFD instead, ` +
        `so a different id would come back. Use well-formed strings.`,
    );
  }
  return value;
}

/** The rules of the ids the saver and the stores key by. */
export const ID_RULES = Object.freeze({
  threadId: { field: "thread_id", maxBytes: ID_LIMITS.threadIdBytes },
  checkpointNs: { field: "checkpoint_ns", maxBytes: ID_LIMITS.checkpointNsBytes, allowEmpty: true },
  checkpointId: { field: "checkpoint_id", maxBytes: ID_LIMITS.checkpointIdBytes },
  taskId: { field: "taskId", maxBytes: ID_LIMITS.taskIdBytes },
  channel: { field: "channel", maxBytes: ID_LIMITS.channelBytes },
  version: { field: "channel version", maxBytes: ID_LIMITS.versionBytes },
  taskPath: { field: "taskPath", maxBytes: ID_LIMITS.taskPathBytes, allowEmpty: true },
  workerId: { field: "workerId", maxBytes: ID_LIMITS.taskIdBytes },
} satisfies Record<string, IdentifierRule>);
