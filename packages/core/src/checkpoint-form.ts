/**
 * The checkpoint as its record stores it, and back.
 *
 * A record keeps the checkpoint without its channel values (they are blobs), its id (the record's key)
 * and, when every version is a string, its channel versions (the record holds them). What is left of a
 * current checkpoint is stored as the array `[v, ts, versions_seen, input, written, nulls]`:
 *
 * - `ts` as milliseconds when it is exactly what `toISOString()` writes for them (LangGraph's always
 *   is), the text otherwise;
 * - `versions_seen` without the runtime's leading empty `__input__` entry, `input` (`1`) saying to put
 *   it back, `0` when it was not there;
 * - `written`: which channels this checkpoint's own put stored a blob for, as a bit mask over the
 *   channel names sorted by code point. A channel that has a version but no value (an empty channel, a
 *   `DeltaChannel` between snapshots) gets no blob at all; a blob this mask names must exist, so a
 *   reader tells a torn checkpoint from an empty channel.
 * - `nulls` (left out when 0): which channels hold `null`, by the same bit order. Their value is the
 *   record's, not a blob's: a branch channel (`branch:to:<node>`) holds `null` after every step that
 *   triggers its node, and a blob row for it cost about 200 bytes on disk and an insert per put. A
 *   record names every channel holding `null`, carried over or new, so no reader looks for its blob.
 *
 * Earlier releases wrote `[v, ts, versions_seen]` and `[v, ts, versions_seen, 1]`, with a blob (of type
 * `"empty"` where there was no value) for every version: those read as before. A checkpoint with any
 * other field keeps the object form, and its put still writes a blob for every new version.
 *
 * @module
 */
import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import { defineKey } from "./serialization.js";

const INPUT_SEEN = "__input__";

/**
 * Channels a mask can describe: a bit per channel in a JS number stays exact up to 2^53. A checkpoint
 * with more channels keeps writing a blob for every new version, as earlier releases did.
 */
const MAX_MASK_CHANNELS = 52;

/** How a checkpoint will be stored: worked out once per put (see {@link checkpointForm}). */
export interface CheckpointForm {
  checkpoint: Checkpoint;
  /** The elements of the compact form; `undefined` when the checkpoint keeps the object form. */
  compact: CompactParts | undefined;
  /**
   * The compact form carries a `written` mask: the put stores no blob for a channel without a value,
   * and the mask names the channels it stored one for.
   */
  masked: boolean;
}

/** The form `checkpoint` is stored in (see the module comment). */
export function checkpointForm(checkpoint: Checkpoint): CheckpointForm {
  const compact = compactParts(checkpoint);
  return { checkpoint, compact, masked: compact !== undefined && Object.keys(checkpoint.channel_versions ?? {}).length <= MAX_MASK_CHANNELS };
}

/**
 * The record value of a checkpoint in its `form`. `written`: the channels its put stored a blob for,
 * when the form is {@link CheckpointForm.masked}.
 */
export function storedCheckpoint(form: CheckpointForm, written: ReadonlySet<string> | undefined, nulls?: ReadonlySet<string>): unknown {
  const { checkpoint, compact } = form;
  if (!compact) {
    const { channel_values: _values, id: _id, channel_versions: versions, ...rest } = checkpoint;
    return Object.values(versions ?? {}).some((v) => typeof v !== "string") ? { ...rest, channel_versions: versions } : rest;
  }
  const { v, ts, seen, input } = compact;
  if (!written || !form.masked) return input === 1 ? [v, ts, seen, 1] : [v, ts, seen];
  const order = Object.keys(checkpoint.channel_versions ?? {}).sort(compareCodePoints);
  let mask = 0;
  let nullMask = 0;
  for (let index = 0; index < order.length; index += 1) {
    if (written.has(order[index]!)) mask += 2 ** index;
    if (nulls?.has(order[index]!)) nullMask += 2 ** index;
  }
  return nullMask > 0 ? [v, ts, seen, input, mask, nullMask] : [v, ts, seen, input, mask];
}

interface CompactParts {
  v: unknown;
  ts: string | number;
  seen: unknown;
  input: 0 | 1;
}

/** The elements of the compact form, or `undefined` when the checkpoint keeps the object form. */
function compactParts(checkpoint: Checkpoint): CompactParts | undefined {
  // Loops rather than rest destructuring: this runs on every put, over a channel per node.
  const versions = (checkpoint.channel_versions ?? {}) as Record<string, unknown>;
  for (const channel of Object.keys(versions)) if (typeof versions[channel] !== "string") return undefined;
  // Besides channel_values, id and channel_versions, exactly v, ts (a string: the compact form reads a
  // number as milliseconds) and versions_seen.
  let others = 0;
  for (const key of Object.keys(checkpoint)) {
    if (key === "channel_values" || key === "id" || key === "channel_versions") continue;
    if (key !== "v" && key !== "ts" && key !== "versions_seen") return undefined;
    others += 1;
  }
  if (others !== 3 || typeof checkpoint.ts !== "string") return undefined;
  const seen = checkpoint.versions_seen as Record<string, unknown> | undefined;
  // LangGraph's runtime starts every versions_seen with `"__input__": {}`: left out, and put back first
  // on reading.
  if (seen && typeof seen === "object" && Object.getPrototypeOf(seen) === Object.prototype) {
    const keys = Object.keys(seen);
    const first = seen[INPUT_SEEN];
    if (keys[0] === INPUT_SEEN && first && typeof first === "object" && Object.getPrototypeOf(first) === Object.prototype && Object.keys(first).length === 0) {
      const rest: Record<string, unknown> = {};
      // defineKey keeps a key named __proto__ an own property, as rest destructuring did.
      for (let i = 1; i < keys.length; i += 1) defineKey(rest, keys[i]!, seen[keys[i]!]);
      return { v: checkpoint.v, ts: compactTs(checkpoint.ts), seen: rest, input: 1 };
    }
  }
  return { v: checkpoint.v, ts: compactTs(checkpoint.ts), seen, input: 0 };
}

/**
 * A stored checkpoint back in LangGraph's shape, and, when its record says (the `written` mask), which
 * channels its put stored a blob for: a function, worked out only when asked (a read asks only when a
 * blob is missing).
 */
export function expandCheckpoint(
  stored: unknown,
  channelVersions: Record<string, string>,
): { checkpoint: Checkpoint; written?: () => ReadonlySet<string>; nulls?: ReadonlySet<string> } {
  if (!Array.isArray(stored)) return { checkpoint: stored as Checkpoint };
  const [v, ts, versionsSeen, input, mask, nullMask] = stored as [
    number,
    string | number,
    Checkpoint["versions_seen"],
    0 | 1 | undefined,
    number | undefined,
    number | undefined,
  ];
  const checkpoint = {
    v,
    ts: typeof ts === "number" ? new Date(ts).toISOString() : ts,
    versions_seen: input === 1 ? { [INPUT_SEEN]: {}, ...versionsSeen } : versionsSeen,
  } as Checkpoint;
  if (typeof mask !== "number") return { checkpoint };
  const written = (): ReadonlySet<string> => maskedChannels(mask, channelVersions);
  if (typeof nullMask === "number" && nullMask > 0) return { checkpoint, written, nulls: maskedChannels(nullMask, channelVersions) };
  return { checkpoint, written };
}

/** The channels a bit mask names, over the channel names sorted by code point. */
function maskedChannels(mask: number, channelVersions: Record<string, string>): ReadonlySet<string> {
  const channels = new Set<string>();
  const order = Object.keys(channelVersions).sort(compareCodePoints);
  for (let i = 0, rest = mask; rest > 0 && i < order.length; i += 1, rest = Math.floor(rest / 2)) {
    if (rest % 2 === 1) channels.add(order[i]!);
  }
  return channels;
}

/**
 * A checkpoint's `ts` in the compact form: the milliseconds since the epoch when the text is exactly
 * what `toISOString()` writes for them, 13 digits instead of 26 characters and two quotes; the text
 * itself otherwise.
 */
function compactTs(ts: string): string | number {
  const ms = Date.parse(ts);
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 && new Date(ms).toISOString() === ts ? ms : ts;
}

function compareCodePoints(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
