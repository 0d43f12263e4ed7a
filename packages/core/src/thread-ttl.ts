/**
 * The whole-thread TTL options that stores sweeping expired threads themselves share (SQLite,
 * PostgreSQL): one check of `ttlSeconds` and `refreshOnRead`, with the same limits and messages.
 *
 * @module
 */
import { InvalidConfigError } from "./errors.js";

/** The longest `ttlSeconds`: ten years. */
export const MAX_TTL_SECONDS = 10 * 365 * 86_400;

/** The TTL options as a store keeps them. */
export interface ThreadTtlSettings {
  /** `ttlSeconds` in milliseconds; 0 without a TTL. */
  ttlMs: number;
  /** Whether reads move a thread's expiry forward. */
  refreshOnRead: boolean;
}

/**
 * Checks a store's `ttlSeconds` (an integer from 1 to {@link MAX_TTL_SECONDS}) and `refreshOnRead`
 * (a boolean, only with `ttlSeconds`), throwing {@link InvalidConfigError} naming the store.
 */
export function threadTtlSettings(options: { ttlSeconds?: unknown; refreshOnRead?: unknown }, storeName: string): ThreadTtlSettings {
  const { ttlSeconds, refreshOnRead } = options;
  if (ttlSeconds !== undefined && (typeof ttlSeconds !== "number" || !Number.isInteger(ttlSeconds) || ttlSeconds < 1 || ttlSeconds > MAX_TTL_SECONDS)) {
    throw new InvalidConfigError("ttlSeconds", `${storeName}: "ttlSeconds" must be an integer from 1 to ${MAX_TTL_SECONDS} (ten years), got ${String(ttlSeconds)}.`);
  }
  if (refreshOnRead !== undefined && typeof refreshOnRead !== "boolean") {
    throw new InvalidConfigError("refreshOnRead", `${storeName}: "refreshOnRead" must be true or false, got ${String(refreshOnRead)}.`);
  }
  if (refreshOnRead && ttlSeconds === undefined) {
    throw new InvalidConfigError("refreshOnRead", `${storeName}: "refreshOnRead" needs "ttlSeconds" (there is no expiry to refresh without it).`);
  }
  return { ttlMs: ((ttlSeconds as number | undefined) ?? 0) * 1000, refreshOnRead: refreshOnRead ?? false };
}
