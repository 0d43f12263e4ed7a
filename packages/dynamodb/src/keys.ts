/**
 * The key schema: one partition per thread, one sort-key space per record kind.
 *
 * | item       | `pk`      | `sk`                                                     |
 * | ---------- | --------- | -------------------------------------------------------- |
 * | checkpoint | thread id | `c|` ns `|` checkpoint id                                 |
 * | blob       | thread id | `b|` ns `|` len(channel) channel `|` version              |
 * | write      | thread id | `w|` ns `|` ordered(checkpoint id) `|` len(task) task `|` idx |
 * | write batch commit | thread id | `w|` ns `|` ordered(checkpoint id) `|!` token         |
 * | chunk      | thread id | `k|` len(hash) hash `|` index                             |
 * | lease      | thread id | `l|` (with `manyWorkers`; kept by `deleteThread`)          |
 * | status     | thread id | `s|` (with `manyWorkers`)                                  |
 *
 * - `ns` is the namespace as `len(ns) ns` when it is at most {@link INLINE_NS_BYTES} bytes of UTF-8,
 *   else `#` and the base64url SHA-256 of it (the full namespace is then kept in the checkpoint's
 *   `ns` attribute). `len(s)` is the length of `s` in UTF-16 code units as three digits.
 * - Components that other components follow are prefix-free (length-prefixed, hashed, or
 *   {@link ordered}), so no id, whatever characters it holds (`|` included), can make two records
 *   share a key or fall into another record's prefix.
 * - The components that are compared by range keep their order: the checkpoint id and the version
 *   end their keys raw; the write's checkpoint id is {@link ordered} (escaped, still in order).
 *   DynamoDB orders sort keys by their UTF-8 bytes, which is code-point order.
 * - Worst cases within core's id limits (512-byte thread ids, 256-byte ids, channels, task ids and
 *   versions, of any characters): sort keys up to 992 bytes (DynamoDB allows 1024), partition keys
 *   up to 512 (DynamoDB allows 2048).
 *
 * @module
 */
import { createHash } from "node:crypto";

/** Namespaces up to this many UTF-8 bytes are written into keys as they are; longer ones are hashed. */
export const INLINE_NS_BYTES = 200;

/** The partition key attribute (the thread id). */
export const PK = "pk";
/** The sort key attribute. */
export const SK = "sk";

/** `len(s) s`: three digits of UTF-16 length, then the string. */
function lp(s: string): string {
  if (s.length > 999) throw new RangeError(`a key component of ${s.length} UTF-16 units is longer than the key schema allows (999)`);
  return `${String(s.length).padStart(3, "0")}${s}`;
}

/** Reads an {@link lp} component at `at`; returns it and the index after it. */
function readLp(key: string, at: number): [string, number] {
  const length = Number.parseInt(key.slice(at, at + 3), 10);
  return [key.slice(at + 3, at + 3 + length), at + 3 + length];
}

/**
 * An order-preserving, prefix-free form of a string without NUL: `\x01` becomes `\x01\x02` and
 * `\x01\x01` ends it (the tuple encoding FoundationDB uses, with `\x01` as the escape because ids
 * never hold NUL). `ordered(a) < ordered(b)` exactly when `a < b`.
 */
export function ordered(s: string): string {
  return `${s.replaceAll("\u0001", "\u0001\u0002")}\u0001\u0001`;
}

/** Reads an {@link ordered} component at `at`; returns it and the index after its terminator. */
function readOrdered(key: string, at: number): [string, number] {
  let out = "";
  let i = at;
  for (;;) {
    const next = key.indexOf("\u0001", i);
    if (next < 0) throw new Error(`malformed sort key ${JSON.stringify(key)}`);
    out += key.slice(i, next);
    if (key[next + 1] === "\u0001") return [out, next + 2];
    out += "\u0001";
    i = next + 2;
  }
}

/**
 * Starts the name retention gives a hashed namespace it cannot name: records of a namespace longer than
 * {@link INLINE_NS_BYTES} whose checkpoints (the only items that carry the full name) are gone, as a
 * crash between two steps of a removal leaves them. Core refuses NUL in ids, so no real namespace
 * starts with it, and {@link nsKey} turns such a name back into the key component it stands for.
 */
export const UNNAMED_NS = "\u0000";

/** The namespace as it appears in keys. */
export function nsKey(ns: string): string {
  if (ns.startsWith(UNNAMED_NS)) return ns.slice(UNNAMED_NS.length);
  return Buffer.byteLength(ns, "utf8") <= INLINE_NS_BYTES ? lp(ns) : `#${createHash("sha256").update(ns).digest("base64url")}`;
}

/** Whether `ns` is a name {@link UNNAMED_NS} gives: the marker and a hashed key component. */
export function isUnnamedNs(ns: string): boolean {
  return /^\u0000#[A-Za-z0-9_-]{43}$/.test(ns);
}

/** The namespace component of a checkpoint, blob or write key, as the key holds it. */
export function nsComponentOf(key: string): string {
  const [, at] = readNs(key, 2);
  return key.slice(2, at);
}

/** The namespace an inline component ({@link nsComponentOf}) holds; `undefined` for a hashed one. */
export function nsOfComponent(component: string): string | undefined {
  return component.startsWith("#") ? undefined : readLp(component, 0)[0];
}

/** Whether the namespace is hashed in keys (so its checkpoints carry it as an attribute). */
export function nsIsHashed(ns: string): boolean {
  return nsKey(ns).startsWith("#");
}

/** Reads the namespace component at `at` of a key: the namespace (undefined when hashed) and the index after it. */
function readNs(key: string, at: number): [string | undefined, number] {
  if (key[at] === "#") return [undefined, at + 44];
  return readLp(key, at);
}

export const checkpointPrefix = (ns: string): string => `c|${nsKey(ns)}|`;
export const checkpointKey = (ns: string, checkpointId: string): string => `${checkpointPrefix(ns)}${checkpointId}`;
export const blobPrefix = (ns: string, channel: string): string => `b|${nsKey(ns)}|${lp(channel)}|`;
export const blobKey = (ns: string, channel: string, version: string): string => `${blobPrefix(ns, channel)}${version}`;
export const writesPrefix = (ns: string, checkpointId: string): string => `w|${nsKey(ns)}|${ordered(checkpointId)}|`;
export const writeKey = (ns: string, checkpointId: string, taskId: string, idx: number): string =>
  `${writesPrefix(ns, checkpointId)}${lp(taskId)}|${idx}`;
/**
 * The commit item of a batch of writes: its writes carry the token and are visible only once it
 * exists. It sits in its checkpoint's write range (so the Query that reads the writes reads it), and
 * `!` never starts a write's task component (three digits), so the two never share a key.
 */
export const writeCommitKey = (ns: string, checkpointId: string, token: string): string => `${writesPrefix(ns, checkpointId)}!${token}`;
/**
 * The thread's lease item (`manyWorkers`). A fixed key: no other kind starts with `l`, and every other
 * kind's key is longer than its two-character kind prefix, so no id can produce it.
 */
export const LEASE_KEY = "l|";
/** The thread's status item (`manyWorkers`), a fixed key like {@link LEASE_KEY}. */
export const STATUS_KEY = "s|";
export const chunkPrefix = (hash: string): string => `k|${lp(hash)}|`;
export const chunkKey = (hash: string, index: number): string => `${chunkPrefix(hash)}${index}`;

/** Sorts after every key that extends `prefix` with an ASCII character (all of ours do), for BETWEEN bounds. */
export const prefixEnd = (prefix: string): string => `${prefix}\u{10FFFF}`;

/** The parts of a checkpoint key: the namespace (undefined when hashed) and the checkpoint id. */
export function parseCheckpointKey(key: string): { ns: string | undefined; checkpointId: string } {
  const [ns, at] = readNs(key, 2);
  return { ns, checkpointId: key.slice(at + 1) };
}

/** The parts of a blob key. */
export function parseBlobKey(key: string): { channel: string; version: string } {
  const [, at] = readNs(key, 2);
  const [channel, end] = readLp(key, at + 1);
  return { channel, version: key.slice(end + 1) };
}

/** The parts of a write key. */
export function parseWriteKey(key: string): { checkpointId: string; taskId: string; idx: number } {
  const [, at] = readNs(key, 2);
  const [checkpointId, afterId] = readOrdered(key, at + 1);
  const [taskId, afterTask] = readLp(key, afterId + 1);
  return { checkpointId, taskId, idx: Number.parseInt(key.slice(afterTask + 1), 10) };
}

/** The {@link writesPrefix} of a write or batch commit key: what every item of its checkpoint's writes starts with. */
export function writesPrefixOfKey(key: string): string {
  const [, at] = readNs(key, 2);
  const [, end] = readOrdered(key, at + 1);
  return key.slice(0, end + 1);
}

/** The parts of a chunk key. */
export function parseChunkKey(key: string): { hash: string; index: number } {
  const [hash, at] = readLp(key, 2);
  return { hash, index: Number.parseInt(key.slice(at + 1), 10) };
}
