/**
 * Seeded payloads that do not compress.
 *
 * PostgreSQL (TOAST/pglz) and MongoDB (WiredTiger) compress large values, so `"x".repeat(2000)` would
 * hide the real growth. Every backend gets the same text from the same seed, drawn uniformly from the
 * 64 base64 characters: about 6 bits of entropy per byte, which no general-purpose compressor shrinks
 * by more than a quarter.
 *
 * @module
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The seed every run uses unless told otherwise, so runs on different days store the same bytes. */
export const DEFAULT_SEED = 0x5eed_2026;

/** A small, fast, seeded PRNG (mulberry32). Deterministic across platforms. */
export function createRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `bytes` characters of seeded base64-alphabet text (ASCII, so characters equal bytes). */
export function randomText(rng: () => number, bytes: number): string {
  const out = new Array<string>(bytes);
  for (let i = 0; i < bytes; i += 1) out[i] = ALPHABET[Math.floor(rng() * 64)]!;
  return out.join("");
}

/** One chat turn: the user's message and the assistant's answer. */
export interface Turn {
  user: string;
  assistant: string;
}

/** The first `count` turns of the conversation for `seed`; a prefix of a longer run is identical. */
export function chatTurns(seed: number, count: number, messageBytes: number): Turn[] {
  const rng = createRng(seed);
  const turns: Turn[] = [];
  for (let i = 0; i < count; i += 1) turns.push({ user: randomText(rng, messageBytes), assistant: randomText(rng, messageBytes) });
  return turns;
}
