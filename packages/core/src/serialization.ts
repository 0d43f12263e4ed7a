/**
 * Serialization helpers shared by the saver: typed errors around the serializer, canonical JSON for
 * metadata, and splitting values that exceed a store's item limit into content-addressed chunks.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { JsonPlusSerializer, type SerializerProtocol } from "@langchain/langgraph-checkpoint";

import { CorruptRecordError, SerializationError, ValueTooLargeError, formatBytes } from "./errors.js";
import { MAX_VALUE_DEPTH, dumpsJsonPlus, loadsJsonPlus } from "./json-plus.js";
import type { ChunkRecord, SerializedValue } from "./store.js";

const EMPTY_BYTES = new Uint8Array(0);

/** The serialized form of "this channel has a version but no value". */
export const EMPTY_VALUE: SerializedValue = Object.freeze({ type: "empty", data: EMPTY_BYTES }) as SerializedValue;

/**
 * Finds the first part of a value that a JSON-based serializer would silently drop or mangle: a
 * function, a symbol, a bigint, or a cycle. Returns its path, or `undefined` when the value is data.
 * Objects with their own `toJSON` are trusted to serialize themselves (LangChain messages do).
 */
export function findUnserializable(value: unknown): { path: string; reason: string } | undefined {
  const seen = new Set<object>();
  const visit = (v: unknown, path: string): { path: string; reason: string } | undefined => {
    if (seen.size > MAX_VALUE_DEPTH) return { path, reason: `the value is nested more than ${MAX_VALUE_DEPTH} levels deep` };
    switch (typeof v) {
      case "function":
        return { path, reason: `a function (${(v as { name?: string }).name || "anonymous"}) cannot be stored` };
      case "symbol":
        return { path, reason: "a symbol cannot be stored" };
      case "bigint":
        return { path, reason: "a bigint cannot be stored by the JSON serializer; store it as a string" };
      case "object":
        break;
      default:
        return undefined;
    }
    if (v === null || ArrayBuffer.isView(v) || v instanceof Date || v instanceof RegExp) return undefined;
    const obj = v as object;
    if (seen.has(obj)) return { path, reason: "the value contains a reference cycle" };
    if (typeof (obj as { toJSON?: unknown }).toJSON === "function") return undefined;
    seen.add(obj);
    try {
      if (obj instanceof Map) {
        let i = 0;
        for (const [k, item] of obj) {
          const found = visit(k, `${path}.<key ${i}>`) ?? visit(item, `${path}.get(${JSON.stringify(String(k))})`);
          if (found) return found;
          i += 1;
        }
        return undefined;
      }
      if (obj instanceof Set) {
        let i = 0;
        for (const item of obj) {
          const found = visit(item, `${path}.<item ${i}>`);
          if (found) return found;
          i += 1;
        }
        return undefined;
      }
      if (Array.isArray(obj)) {
        for (let i = 0; i < obj.length; i += 1) {
          const found = visit(obj[i], `${path}[${i}]`);
          if (found) return found;
        }
        return undefined;
      }
      for (const key of Object.keys(obj)) {
        const found = visit((obj as Record<string, unknown>)[key], `${path}${/^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`}`);
        if (found) return found;
      }
      return undefined;
    } finally {
      seen.delete(obj);
    }
  };
  return visit(value, "$");
}

/** What LangGraph's JSON writer stores when `JSON.stringify` throws inside it. */
const PLACEHOLDER_JSON = new TextEncoder().encode(JSON.stringify("[unable to serialize, circular reference is too complex to analyze]"));

function isPlaceholder(data: Uint8Array): boolean {
  if (data.byteLength !== PLACEHOLDER_JSON.byteLength) return false;
  for (let i = 0; i < data.byteLength; i += 1) if (data[i] !== PLACEHOLDER_JSON[i]) return false;
  return true;
}

/**
 * Whether the serializer is LangGraph's own `JsonPlusSerializer` (not a subclass), whose format core
 * writes itself, strictly and in one pass (see {@link dumpsJsonPlus}).
 */
export function isDefaultSerde(serde: SerializerProtocol): boolean {
  return (serde as object).constructor === JsonPlusSerializer;
}

/**
 * Serializes one value with the saver's serializer, turning failures (and values the serializer would
 * silently mangle) into a {@link SerializationError} that names the target.
 *
 * With LangGraph's default serializer, core writes its format itself and refuses what it would store
 * changed (see {@link dumpsJsonPlus}). With any other serializer, values a JSON-based serializer
 * would drop (functions, symbols, bigints, cycles) are refused before it runs, and its output is
 * checked for LangGraph's "unable to serialize" placeholder.
 */
export async function serializeValue(
  serde: SerializerProtocol,
  value: unknown,
  target: string,
  maxBytes: number,
): Promise<SerializedValue> {
  if (isDefaultSerde(serde)) return serializeDefault(value, target, maxBytes);
  const bad = findUnserializable(value);
  if (bad) throw new SerializationError(target, bad.reason, bad.path);
  let type: string;
  let data: Uint8Array;
  try {
    [type, data] = await serde.dumpsTyped(value);
  } catch (error) {
    throw new SerializationError(target, error instanceof Error ? error.message : String(error), undefined, error);
  }
  if (type === "json" && isPlaceholder(data) && value !== "[unable to serialize, circular reference is too complex to analyze]") {
    throw new SerializationError(target, "the serializer failed inside JSON.stringify and returned its placeholder text instead of the value");
  }
  checkSize(data, target, maxBytes);
  return { type, data };
}

/**
 * {@link serializeValue} with LangGraph's default serializer, which core writes itself: synchronous,
 * so a put with the default serializer awaits nothing to serialize its values.
 */
export function serializeDefault(value: unknown, target: string, maxBytes: number): SerializedValue {
  const serialized: SerializedValue = value instanceof Uint8Array ? { type: "bytes", data: value } : { type: "json", data: dumpsJsonPlus(value, target) };
  checkSize(serialized.data, target, maxBytes);
  return serialized;
}

function checkSize(data: Uint8Array, target: string, maxBytes: number): void {
  if (data.byteLength > maxBytes) {
    throw new ValueTooLargeError(
      target,
      data.byteLength,
      maxBytes,
      "Raise the saver's `maxValueBytes`, or keep large payloads out of graph state (store them elsewhere and keep a reference).",
    );
  }
}

/** Deserializes a stored value (already reassembled) with the saver's serializer. */
export async function deserializeValue(serde: SerializerProtocol, value: SerializedValue, target: string): Promise<unknown> {
  try {
    if (value.type === "json" && isDefaultSerde(serde)) return await loadsJsonPlus(value.data);
    return await serde.loadsTyped(value.type, value.data);
  } catch (error) {
    throw new CorruptRecordError(
      `${target} (type "${value.type}", ${formatBytes(value.data.byteLength)}) cannot be deserialized: ${
        error instanceof Error ? error.message : String(error)
      }`,
    );
  }
}

/**
 * Metadata as canonical JSON: what `JSON.stringify` keeps, with object keys sorted at every level, so
 * equal values have equal text whatever order their keys were written in.
 */
export function canonicalJson(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((item) => (item === undefined || typeof item === "function" ? null : canonicalJson(item)));
  const toJSON = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof toJSON === "function") return canonicalJson(toJSON.call(value));
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (item === undefined || typeof item === "function" || typeof item === "symbol") continue;
    defineKey(out, key, canonicalJson(item));
  }
  return out;
}

/**
 * The canonical JSON of a value that is plain JSON data (see `isPlainJson`: no `undefined`, no class
 * instances, no `-0`...), in one walk; `undefined` when it is not, and must be serialized the full way.
 */
export function canonicalPlainJson(value: unknown): unknown {
  return plainJsonCopy(value, true);
}

/**
 * A copy of plain JSON data (see {@link canonicalPlainJson}), with each object's keys sorted when
 * `sortKeys` or in their own order otherwise (as a JSON round trip keeps them, own `"__proto__"` keys
 * included); `undefined` when the value is not plain JSON data.
 */
export function plainJsonCopy(value: unknown, sortKeys: boolean, depth = 0): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) && !(value === 0 && Object.is(value, -0)) ? value : undefined;
    case "object":
      break;
    default:
      return undefined;
  }
  if (value === null) return null;
  if (depth >= MAX_VALUE_DEPTH) return undefined;
  if (Array.isArray(value)) {
    const out: unknown[] = new Array(value.length);
    for (let i = 0; i < value.length; i += 1) {
      if (!(i in value)) return undefined;
      const item = plainJsonCopy(value[i], sortKeys, depth + 1);
      if (item === undefined) return undefined;
      out[i] = item;
    }
    return out;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return undefined;
  const out: Record<string, unknown> = {};
  const keys = Object.keys(value);
  if (sortKeys) keys.sort();
  for (const key of keys) {
    const item = plainJsonCopy((value as Record<string, unknown>)[key], sortKeys, depth + 1);
    if (item === undefined) return undefined;
    defineKey(out, key, item);
  }
  return out;
}

/** Sets an own property, even for `"__proto__"` (a plain assignment would set the prototype instead). */
export function defineKey(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** Canonical JSON text of a value (see {@link canonicalJson}); `undefined` for values JSON drops. */
export function canonicalJsonText(value: unknown): string | undefined {
  const canonical = canonicalJson(value);
  return canonical === undefined ? undefined : JSON.stringify(canonical);
}

/**
 * Splits a serialized value into content-addressed chunks when it exceeds `maxBytes`. The returned
 * value keeps its type, carries a {@link SerializedValue.chunkRef} and no inline bytes.
 */
export function splitIfLarge(value: SerializedValue, maxBytes: number, chunks: ChunkRecord[]): SerializedValue {
  if (value.data.byteLength <= maxBytes) return value;
  const hash = createHash("sha256").update(value.data).digest("hex");
  const count = Math.ceil(value.data.byteLength / maxBytes);
  for (let index = 0; index < count; index += 1) {
    chunks.push({ hash, index, data: value.data.subarray(index * maxBytes, (index + 1) * maxBytes) });
  }
  const split: SerializedValue = { type: value.type, data: EMPTY_BYTES, chunkRef: { hash, count, size: value.data.byteLength } };
  // The bytes split are the value's own, piece holes included: the references stay with it.
  if (value.refs) split.refs = value.refs;
  return split;
}

/** Reassembles a split value from its chunks, checking count, size and hash. */
export function joinChunks(value: SerializedValue, chunks: ChunkRecord[], target: string): SerializedValue {
  const ref = value.chunkRef;
  if (!ref) return value;
  const byIndex = new Map(chunks.filter((c) => c.hash === ref.hash).map((c) => [c.index, c.data] as const));
  const data = new Uint8Array(ref.size);
  let offset = 0;
  for (let index = 0; index < ref.count; index += 1) {
    const part = byIndex.get(index);
    if (!part) throw new CorruptRecordError(`${target} is missing chunk ${index} of ${ref.count} (hash ${ref.hash})`);
    if (offset + part.byteLength > ref.size) throw new CorruptRecordError(`${target} has chunks larger than its recorded size`);
    data.set(part, offset);
    offset += part.byteLength;
  }
  if (offset !== ref.size) throw new CorruptRecordError(`${target} reassembles to ${offset} bytes, expected ${ref.size}`);
  if (createHash("sha256").update(data).digest("hex") !== ref.hash) {
    throw new CorruptRecordError(`${target} does not match its content hash ${ref.hash}`);
  }
  return { type: value.type, data };
}
