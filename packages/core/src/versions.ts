/**
 * Channel versions: short, ordered, and unique per write.
 *
 * A version is `<counter><.><random>`: the counter in base 36 behind one base-36 digit giving its
 * length, so versions compare as strings in counter order (`"15"` < `"1z"` < `"210"`), and 8 random
 * base64url characters (48 bits), so that a fork from an old checkpoint never reuses a version its
 * abandoned branch stored a different value under (blobs are keyed by channel and version). Versions
 * of the first release (`<32 zero-padded digits>.<16 hex>`) start with `0` and so sort below every
 * new one; a thread written by it continues with the next counter.
 *
 * @module
 */
import { randomBytes } from "node:crypto";

const pool = { bytes: Buffer.alloc(0), offset: 0 };

/** 8 random base64url characters, from a pooled buffer (one `randomBytes` call per 680 versions). */
function randomSuffix(): string {
  if (pool.offset + 6 > pool.bytes.length) {
    pool.bytes = randomBytes(4096);
    pool.offset = 0;
  }
  const out = pool.bytes.toString("base64url", pool.offset, pool.offset + 6);
  pool.offset += 6;
  return out;
}

/** The counter of a version: its position in the order of versions of one channel. */
export function versionCounter(version: unknown): number {
  if (typeof version === "number") return Number.isFinite(version) ? Math.trunc(version) : 0;
  if (typeof version !== "string" || version === "") return 0;
  if (version.startsWith("0")) return Number.parseInt(version.split(".")[0] ?? "0", 10) || 0;
  const length = Number.parseInt(version[0]!, 36);
  const counter = Number.parseInt(version.slice(1, 1 + length), 36);
  return Number.isFinite(counter) ? counter : 0;
}

/** The counter `n` (at least 1) in its ordered form. */
export function encodeCounter(n: number): string {
  const digits = Math.max(1, Math.trunc(n)).toString(36);
  return digits.length.toString(36) + digits;
}

/** The version after `current`: the next counter and a new random suffix. */
export function nextVersion(current: unknown): string {
  return `${encodeCounter(versionCounter(current) + 1)}.${randomSuffix()}`;
}
