/**
 * Checkpoint metadata as a record stores it.
 *
 * Metadata made only of plain JSON values (the runtime's always is) is stored once, as the record's
 * `metadataJson`, which stores filter on natively. The runtime adds three keys of its own to every
 * checkpoint, which nobody filters on and which cost a DeltaChannel thread about 90 bytes per
 * checkpoint: `parents` (`{}` at the root), `delta_writes_versioned` (`true`) and
 * `counters_since_delta_snapshot` (a count per delta channel). With their usual values they are kept
 * out of `metadataJson` and written short in the record's metadata value, of type `"+"`: the letter
 * `d` for `"delta_writes_versioned": true`, `p` for `"parents": {}` (in key order), then the counters' JSON, if any.
 * Any other value of these keys stays in `metadataJson`, as does every other key.
 *
 * The saver filters on these keys itself (a store's native filter never sees them), and every reader
 * of a record's metadata goes through {@link recordMetadata}. This is part of the stored format: the
 * letters may be added to, never changed.
 *
 * @module
 */
import { encodeUtf8 } from "./json-plus.js";
import { canonicalJson } from "./serialization.js";
import type { CheckpointRecord, SerializedValue } from "./store.js";

/** The metadata type of a record whose metadata is exactly its `metadataJson`. */
export const METADATA_AS_JSON = "=";

/** The metadata type of a record whose metadata is its `metadataJson` plus the runtime's keys written short. */
export const METADATA_SPLIT = "+";

const PARENTS = "parents";
const VERSIONED = "delta_writes_versioned";
const COUNTERS = "counters_since_delta_snapshot";

/** The keys that may be kept out of `metadataJson`: a filter naming one is applied by the saver. */
export const RUNTIME_METADATA_KEYS: ReadonlySet<string> = new Set([PARENTS, VERSIONED, COUNTERS]);

const decoder = new TextDecoder();

/**
 * The record fields of plain-JSON metadata (its keys sorted, as canonical JSON keeps them): the
 * runtime's keys with their usual values written short, the rest as `metadataJson`.
 */
export function plainMetadataFields(plain: Record<string, unknown>): { metadata: SerializedValue; metadataJson: Record<string, unknown> } {
  let flags = "";
  let counters = "";
  const rest: Array<[string, unknown]> = [];
  for (const [key, value] of Object.entries(plain)) {
    if (key === PARENTS && isEmptyObject(value)) flags += "p";
    else if (key === VERSIONED && value === true) flags += "d";
    else if (key === COUNTERS && isCounters(value)) counters = JSON.stringify(value);
    else rest.push([key, value]);
  }
  if (flags === "" && counters === "") return { metadata: { type: METADATA_AS_JSON, data: new Uint8Array(0) }, metadataJson: plain };
  // fromEntries defines each key as data, "__proto__" included.
  return { metadata: { type: METADATA_SPLIT, data: encodeUtf8(flags + counters) }, metadataJson: Object.fromEntries(rest) };
}

/**
 * The whole metadata of a record stored as plain JSON (type `"="` or `"+"`), keys sorted; `undefined`
 * for metadata serialized by the saver's serializer (its `metadataJson` is then the canonical JSON
 * form of it, complete).
 */
export function recordMetadata(record: Pick<CheckpointRecord, "metadata" | "metadataJson">): Record<string, unknown> | undefined {
  const { type, data } = record.metadata;
  // Keys sorted at every level whatever order the database keeps them in (PostgreSQL's jsonb sorts
  // them by length), so that metadata reads back the same from every backend.
  if (type === METADATA_AS_JSON) return isCanonical(record.metadataJson, 0) ? record.metadataJson : (canonicalJson(record.metadataJson) as Record<string, unknown>);
  if (type !== METADATA_SPLIT) return undefined;
  // The flags are ASCII letters before the counters' JSON (which starts with "{"): read as bytes.
  let flags = 0;
  let start = 0;
  for (; start < data.byteLength && data[start] !== OPEN_BRACE; start += 1) flags |= data[start] === LETTER_P ? 1 : data[start] === LETTER_D ? 2 : 0;
  const extras: Array<[string, unknown]> = [];
  // In key order: counters_since_delta_snapshot < delta_writes_versioned < parents.
  if (start < data.byteLength) extras.push([COUNTERS, JSON.parse(decoder.decode(data.subarray(start))) as unknown]);
  if (flags & 2) extras.push([VERSIONED, true]);
  if (flags & 1) extras.push([PARENTS, {}]);
  const json = record.metadataJson;
  if (!isCanonical(json, 0)) return canonicalJson(Object.fromEntries([...Object.entries(json), ...extras])) as Record<string, unknown>;
  // Both lists are sorted and the stored values canonical: merge them (fromEntries defines each key
  // as data, "__proto__" included).
  const merged: Array<[string, unknown]> = [];
  let next = 0;
  for (const key of Object.keys(json)) {
    while (next < extras.length && extras[next]![0] < key) merged.push(extras[next++]!);
    merged.push([key, json[key]]);
  }
  while (next < extras.length) merged.push(extras[next++]!);
  return Object.fromEntries(merged);
}

const OPEN_BRACE = 0x7b;
const LETTER_P = 0x70;
const LETTER_D = 0x64;

/**
 * The metadata filters and readers look at: the whole plain metadata, or the canonical JSON form of
 * serialized metadata (as `metadataJson` holds it).
 */
export function filterableMetadata(record: Pick<CheckpointRecord, "metadata" | "metadataJson">): Record<string, unknown> {
  return recordMetadata(record) ?? record.metadataJson;
}

/** Whether the keys of every object in `value` are in sorted order already (most stores keep them so). */
function isCanonical(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== "object") return true;
  if (depth > 100) return false;
  if (Array.isArray(value)) return value.every((item) => isCanonical(item, depth + 1));
  let previous: string | undefined;
  for (const key of Object.keys(value)) {
    if (previous !== undefined && !(previous < key)) return false;
    previous = key;
    if (!isCanonical((value as Record<string, unknown>)[key], depth + 1)) return false;
  }
  return true;
}

function isEmptyObject(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0;
}

/** LangGraph's counters: channel names to JSON values (written as canonical JSON, keys sorted). */
function isCounters(value: unknown): boolean {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

