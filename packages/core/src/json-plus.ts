/**
 * A strict writer of LangGraph's `JsonPlusSerializer` format. Its bytes are read back by
 * `JsonPlusSerializer.loadsTyped("json", ...)` unchanged, but where LangGraph's writer silently
 * mangles a value (a cycle stored as `"[Circular]"`, an exception inside `JSON.stringify` stored as a
 * placeholder string, a function dropped, `NaN` stored as `null`, a `Float32Array` stored as an
 * object) this one throws a {@link SerializationError} that names the path, and `-0` round-trips.
 * One pass over the value: the checks ride on the replacer `JSON.stringify` calls anyway.
 *
 * @module
 */
import { createHash, randomUUID } from "node:crypto";
import { load } from "@langchain/core/load";
import { DeltaSnapshot, isDeltaSnapshot } from "@langchain/langgraph-checkpoint";

import { CorruptRecordError, SerializationError } from "./errors.js";

/**
 * The deepest nesting a stored value may have. LangGraph's reader revives values recursively, and
 * from about 2000 levels it overflows the stack: a deeper value would be stored but could never be
 * read back. The limit keeps the outcome the same whatever the JIT or the caller's stack depth.
 */
export const MAX_VALUE_DEPTH = 500;

// `-0` has no JSON spelling that JSON.stringify emits, but JSON.parse("-0") is -0: the replacer
// emits this string in its place, and the text is patched afterwards (the nonce keeps user strings
// from ever matching).
const NEGATIVE_ZERO = `\u0000-0:${randomUUID()}`;
const NEGATIVE_ZERO_LITERAL = JSON.stringify(NEGATIVE_ZERO);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The UTF-8 bytes of a string, as a plain `Uint8Array` (so `.slice()` copies). Small strings are
 * encoded into Node's shared buffer pool: `TextEncoder.encode` allocates an `ArrayBuffer` per call,
 * about 1 µs against 0.3 µs here, and a put encodes several strings. The view's `buffer` may be
 * shared: read it with its `byteOffset` and `byteLength`, as every store does.
 */
export function encodeUtf8(text: string): Uint8Array {
  const bytes = Buffer.from(text, "utf8");
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function constructorRecord(name: string, method: string | null, args: unknown[]): Record<string, unknown> {
  return { lc: 2, type: "constructor", id: [name], method, args, kwargs: {} };
}

function pathStep(holder: unknown, key: string): string {
  if (Array.isArray(holder)) return `[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}

/** Why a value (seen after `toJSON`, with `raw` the value before it) cannot be stored, or undefined. */
function refusal(raw: unknown, value: unknown): string | undefined {
  if (raw !== value && raw instanceof Date && Number.isNaN(raw.getTime())) return "an invalid Date (its time is NaN) would be stored as null";
  switch (typeof value) {
    case "function":
      return `a function (${(value as { name?: string }).name || "anonymous"}) cannot be stored`;
    case "symbol":
      return "a symbol cannot be stored";
    case "bigint":
      return `a bigint (${String(value)}n) cannot be stored by the JSON serializer; store it as a string or a number`;
    case "number":
      return Number.isFinite(value) ? undefined : `${String(value)} has no JSON form (it would come back as null); store it as a string or null`;
    case "object": {
      if (value === null || value instanceof Uint8Array) return undefined;
      if (ArrayBuffer.isView(value)) {
        return `a ${value.constructor.name} would come back as a plain object; store its bytes as a Uint8Array (new Uint8Array(x.buffer, x.byteOffset, x.byteLength)) or its numbers as an array`;
      }
      if (value instanceof ArrayBuffer || (typeof SharedArrayBuffer !== "undefined" && value instanceof SharedArrayBuffer)) {
        return `a bare ${value.constructor.name} would come back as {}; wrap it in a Uint8Array`;
      }
      // What LangChain's own toJSON() puts where it met a cycle or an object it cannot serialize.
      if ((value as { lc?: unknown }).lc === 1 && (value as { type?: unknown }).type === "not_implemented") {
        return "LangChain could not serialize this part of a message or object (a reference cycle, or an object that is not data)";
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** The JsonPlus encoding of a value the plain JSON rules do not cover, or the value itself. */
function encode(value: unknown): unknown {
  if (value === undefined) return { lc: 2, type: "undefined" };
  if (typeof value !== "object" || value === null) return value;
  if (isDeltaSnapshot(value)) return { lc: 2, type: "delta_snapshot", value: (value as { value: unknown }).value };
  if (value instanceof Set || value instanceof Map) return constructorRecord(value instanceof Map ? "Map" : "Set", null, [Array.from(value)]);
  if (value instanceof RegExp) return constructorRecord("RegExp", null, [value.source, value.flags]);
  if (value instanceof Error) return constructorRecord("Error", null, [value.message]);
  if ((value as { lg_name?: unknown }).lg_name === "Send") {
    const send = value as { node: unknown; args: unknown; timeout?: unknown };
    return { node: send.node, args: send.args, ...(send.timeout !== undefined ? { timeout: send.timeout } : {}) };
  }
  if (value instanceof Uint8Array) return constructorRecord("Uint8Array", "from", [Array.from(value)]);
  return value;
}

/**
 * Serializes a value the way `JsonPlusSerializer.dumpsTyped` does for non-bytes values (type
 * `"json"`), but refuses what that serializer would store changed, naming the target and the path.
 *
 * @param target What the value is, for messages: `channel "messages"`.
 */
export function dumpsJsonPlus(value: unknown, target: string): Uint8Array {
  // Plain JSON data (the common case for checkpoints and small values) needs no replacer at all.
  if (isPlainJson(value, 0)) return encodeUtf8(JSON.stringify(value));
  return encodeUtf8(stringifyStrict(value, target, "$", 0, undefined));
}

/**
 * Whether JSON.stringify alone writes exactly what {@link dumpsJsonPlus} would: strings, booleans,
 * null, finite numbers other than -0, and arrays (without holes) and plain objects of those.
 */
export function isPlainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
      return true;
    case "number":
      return Number.isFinite(value) && !(value === 0 && Object.is(value, -0));
    case "object":
      break;
    default:
      return false;
  }
  if (value === null) return true;
  if (depth >= MAX_VALUE_DEPTH) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) if (!(i in value) || !isPlainJson(value[i], depth + 1)) return false;
    return true;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  for (const key of Object.keys(value)) if (!isPlainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}

/** Which parts of a value {@link dumpsJsonPlusParts} stores apart, as shared pieces. */
export interface PieceOptions {
  /** Smallest piece, in bytes of its JSON text: list elements and strings at least this large. */
  minBytes: number;
  /** Largest piece (a store's item limit): larger parts stay inline, and core splits the whole value. */
  maxBytes: number;
}

/** A value serialized with its large parts apart: see {@link SerializedValue.refs}. */
export interface SerializedParts {
  /** The JSON text as UTF-8, with one `0x00` byte where each piece goes back in. */
  data: Uint8Array;
  /** The pieces' hashes, one per `0x00` byte, in order (empty when nothing was large enough). */
  refs: string[];
  /** Each piece's bytes, by hash. */
  pieces: Map<string, Uint8Array>;
}

/**
 * Like {@link dumpsJsonPlus}, but stores apart, as content-addressed pieces, the elements of lists
 * near the top of the value (the value itself, or a list under one of its keys: a message list, a
 * `DeltaSnapshot`'s value, an input's `messages`) and long strings elsewhere, when their JSON text is
 * large enough. The same message then has the same bytes, and so the same hash, whether it arrives
 * as an input, a write or a channel value, and a thread stores it once. JSON text never holds a raw
 * NUL (JSON.stringify escapes control characters), so a `0x00` byte can mark each piece.
 */
export function dumpsJsonPlusParts(value: unknown, target: string, options: PieceOptions): SerializedParts {
  const found: string[] = [];
  let text = stringifyStrict(value, target, "$", 0, { minChars: options.minBytes, found });
  const refs: string[] = [];
  const pieces = new Map<string, Uint8Array>();
  if (found.length > 0) {
    text = text.replace(PLACEHOLDER_PATTERN, (_match, index: string) => {
      const piece = found[Number(index)]!;
      const json = encodeUtf8(piece);
      if (json.byteLength < options.minBytes || json.byteLength > options.maxBytes) return piece;
      const bytes = packPiece(piece, json);
      const hash = pieceHash(bytes);
      refs.push(hash);
      pieces.set(hash, bytes);
      return "\u0000";
    });
  }
  return { data: encodeUtf8(text), refs, pieces };
}

// Shared pieces are mostly LangChain messages, and every message repeats the same envelope around
// its text: `{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":
// {"content":` before it and `,"tool_calls":[],...,"response_metadata":{}}}` after it, 160-230
// bytes per message. A piece whose JSON text starts and ends with one of these is stored packed:
// byte 0x01 (no JSON text starts with it), the index of its start in PIECE_STARTS, the index of its
// end in PIECE_ENDS, then the text between them, unchanged. Reading it back is one copy, with no
// scan of the text. The tables are part of the stored format: entries may be appended (up to 255),
// never changed or removed.
const PACKED_PIECE = 0x01;
const MESSAGE_START = '{"lc":1,"type":"constructor","id":["langchain_core","messages","';
const MESSAGE_CLASSES = [
  "HumanMessage",
  "AIMessage",
  "ToolMessage",
  "SystemMessage",
  "AIMessageChunk",
  "HumanMessageChunk",
  "ToolMessageChunk",
  "SystemMessageChunk",
  "ChatMessage",
  "ChatMessageChunk",
  "FunctionMessage",
  "FunctionMessageChunk",
  "RemoveMessage",
];
const PIECE_STARTS: readonly string[] = ["", ...MESSAGE_CLASSES.map((name) => `${MESSAGE_START}${name}"],"kwargs":{"content":`)];
const PIECE_ENDS: readonly string[] = [
  "",
  ',"additional_kwargs":{},"response_metadata":{}}}',
  ',"tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{}}}',
  ',"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{}}}',
  "}}",
];
const START_INDEX = new Map(PIECE_STARTS.map((start, i) => [start, i]));
const ENDS_LONGEST_FIRST = PIECE_ENDS.map((end, i) => [end, i] as const)
  .filter(([end]) => end !== "")
  .sort((x, y) => y[0].length - x[0].length);
const PIECE_START_BYTES = PIECE_STARTS.map((start) => encoder.encode(start));
const PIECE_END_BYTES = PIECE_ENDS.map((end) => encoder.encode(end));

/** A piece's stored bytes: packed when its JSON text has a known envelope, the text (`json`) otherwise. */
function packPiece(text: string, json: Uint8Array): Uint8Array {
  if (!text.startsWith(MESSAGE_START)) return json;
  const close = text.indexOf('"', MESSAGE_START.length);
  const start = START_INDEX.get(text.slice(0, close) + '"],"kwargs":{"content":');
  if (start === undefined || !text.startsWith(PIECE_STARTS[start]!)) return json;
  const head = PIECE_START_BYTES[start]!.byteLength;
  const found = ENDS_LONGEST_FIRST.find(([end]) => text.endsWith(end) && text.length - end.length >= PIECE_STARTS[start]!.length);
  const [endIndex, tail] = found ? [found[1], PIECE_END_BYTES[found[1]]!.byteLength] : [0, 0];
  const out = new Uint8Array(3 + json.byteLength - head - tail);
  out[0] = PACKED_PIECE;
  out[1] = start;
  out[2] = endIndex;
  out.set(json.subarray(head, json.byteLength - tail), 3);
  return out;
}

/**
 * A piece's JSON text from its stored bytes (packed or not; pieces of earlier releases are not), as the
 * segments to copy one after the other: joinPieces copies them straight into the value's bytes.
 */
function pieceSegments(data: Uint8Array, target: string): Uint8Array[] {
  if (data[0] !== PACKED_PIECE) return [data];
  const start = PIECE_START_BYTES[data[1] ?? -1];
  const end = PIECE_END_BYTES[data[2] ?? -1];
  if (!start || !end) throw new CorruptRecordError(`${target} has a packed piece with an unknown envelope (${data[1]}, ${data[2]})`);
  return [start, data.subarray(3), end];
}

/**
 * The content hash of a piece: the first 96 bits of its SHA-256, base64url (16 characters). Pieces
 * are keyed within one thread, where a collision among a million pieces has odds of about 1 in 10^17;
 * pieces of earlier releases have 22-character (128-bit) hashes and read the same.
 */
export function pieceHash(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest().subarray(0, 12).toString("base64url");
}

/**
 * Puts the pieces back into a value's bytes. Throws when a piece is missing, does not match its hash,
 * or the holes and references do not pair up: the value would not be what was stored.
 */
export function joinPieces(data: Uint8Array, refs: readonly string[], pieces: ReadonlyMap<string, Uint8Array>, target: string): Uint8Array {
  const parts: Uint8Array[] = [];
  let total = 0;
  let start = 0;
  let ref = 0;
  for (let i = 0; i <= data.byteLength; i += 1) {
    if (i < data.byteLength && data[i] !== 0) continue;
    const part = data.subarray(start, i);
    parts.push(part);
    total += part.byteLength;
    if (i < data.byteLength) {
      const hash = refs[ref];
      if (hash === undefined) throw new CorruptRecordError(`${target} has more pieces than references (${refs.length})`);
      const piece = pieces.get(hash);
      if (!piece) throw new CorruptRecordError(`${target} references piece ${hash}, which is missing`);
      for (const segment of pieceSegments(piece, target)) {
        parts.push(segment);
        total += segment.byteLength;
      }
      ref += 1;
    }
    start = i + 1;
  }
  if (ref !== refs.length) throw new CorruptRecordError(`${target} references ${refs.length} pieces but holds ${ref}`);
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

interface Extraction {
  minChars: number;
  /** JSON texts of the parts stored apart, by placeholder index. */
  found: string[];
}

// A part stored apart is first replaced by this string; its JSON literal is then replaced by the
// part's text or a hole. The nonce keeps user strings from ever matching.
const PLACEHOLDER = `\u0000piece:${randomUUID()}:`;
const PLACEHOLDER_PATTERN = new RegExp(`${JSON.stringify(PLACEHOLDER).slice(0, -1).replace(/[\\^$.*+?()[\]{}|]/g, "\\$&")}(\\d+)"`, "g");

function stringifyStrict(value: unknown, target: string, basePath: string, baseDepth: number, extract: Extraction | undefined): string {
  if ((typeof value !== "object" || value === null) && isPlainJson(value, 0)) return JSON.stringify(value);
  // The containers JSON.stringify is inside of, innermost last, and the key each sits under: the
  // replacer's `this` is always one of them, so everything above it is finished.
  const holders: unknown[] = [];
  const keys: string[] = [];
  let negativeZero = false;
  const pathTo = (key: string): string => {
    let path = basePath;
    for (let i = 1; i < holders.length; i += 1) path += keys[i]!;
    return holders.length > 0 ? path + pathStep(holders[holders.length - 1], key) : path;
  };
  function replacer(this: unknown, key: string, value: unknown): unknown {
    if (holders.length === 0) {
      holders.push(this);
      keys.push("");
    } else {
      while (holders.length > 1 && holders[holders.length - 1] !== this) {
        holders.pop();
        keys.pop();
      }
    }
    const atRoot = holders.length === 1 && key === "";
    const raw = (this as Record<string, unknown>)[key];
    // A Buffer's own toJSON would turn it into { type: "Buffer", data }: keep it as bytes.
    const source = raw instanceof Uint8Array ? raw : value;
    const reason = refusal(raw, source);
    if (reason) throw new SerializationError(target, reason, atRoot ? basePath : pathTo(key));
    if (typeof source === "number" && source === 0 && Object.is(source, -0)) {
      negativeZero = true;
      return NEGATIVE_ZERO;
    }
    const out = encode(source);
    if (extract && !atRoot) {
      // Elements of a list at depth 1 or 2 (the value, or a list under one of its keys), and long strings.
      if (typeof out === "object" && out !== null && Array.isArray(this) && holders.length <= 3) {
        // Serialized once, here; a small one goes back inline when the placeholders are replaced.
        extract.found.push(stringifyStrict(out, target, pathTo(key), baseDepth + holders.length - 1, undefined));
        return PLACEHOLDER + String(extract.found.length - 1);
      }
      if (typeof out === "string" && out.length >= extract.minChars) {
        extract.found.push(JSON.stringify(out));
        return PLACEHOLDER + String(extract.found.length - 1);
      }
    }
    if (typeof out === "object" && out !== null) {
      holders.push(out);
      keys.push(atRoot ? "" : pathStep(holders[holders.length - 2], key));
      if (baseDepth + holders.length - 1 > MAX_VALUE_DEPTH) {
        const where = pathTo(key);
        throw new SerializationError(
          target,
          `the value is nested more than ${MAX_VALUE_DEPTH} levels deep, deeper than LangGraph's reader can load back`,
          where.length > 200 ? `${where.slice(0, 200)}…` : where,
        );
      }
    }
    return out;
  }
  let text: string;
  try {
    text = JSON.stringify(value, replacer);
  } catch (error) {
    if (error instanceof SerializationError) throw error;
    throw explainFailure(value, target, error);
  }
  if (negativeZero) text = text.replaceAll(NEGATIVE_ZERO_LITERAL, "-0");
  return text;
}

/**
 * Turns an exception from inside `JSON.stringify` (a cycle, a throwing `toJSON`, a stack overflow)
 * into a {@link SerializationError}, walking the value once more to find where it happened.
 */
function explainFailure(value: unknown, target: string, error: unknown): SerializationError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof TypeError && /circular/i.test(message)) {
    return new SerializationError(target, "the value contains a reference cycle", findCycle(value), error);
  }
  if (error instanceof RangeError) {
    return new SerializationError(target, `the value is nested too deeply to store (${message}); keep it under ${MAX_VALUE_DEPTH} levels`, undefined, error);
  }
  return new SerializationError(target, `toJSON() threw: ${message}`, findThrowingToJson(value), error);
}

/** The path of the first object that contains itself, following `toJSON` as JSON.stringify does. */
function findCycle(root: unknown): string | undefined {
  const open = new Set<unknown>();
  const visit = (value: unknown, path: string, depth: number): string | undefined => {
    const v = jsonView(value);
    if (typeof v !== "object" || v === null || depth > MAX_VALUE_DEPTH) return undefined;
    if (open.has(v)) return path;
    open.add(v);
    try {
      for (const [key, child] of Object.entries(v)) {
        const found = visit(child, path + pathStep(v, key), depth + 1);
        if (found) return found;
      }
      return undefined;
    } finally {
      open.delete(v);
    }
  };
  return visit(root, "$", 0);
}

/** The path of the first `toJSON` that throws. */
function findThrowingToJson(root: unknown): string | undefined {
  const seen = new Set<unknown>();
  const visit = (value: unknown, path: string, depth: number): string | undefined => {
    if (typeof value !== "object" || value === null || depth > MAX_VALUE_DEPTH || seen.has(value)) return undefined;
    seen.add(value);
    let v: unknown = value;
    if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
      try {
        v = (value as { toJSON(): unknown }).toJSON();
      } catch {
        return path;
      }
    }
    if (typeof v !== "object" || v === null) return undefined;
    for (const [key, child] of Object.entries(v)) {
      const found = visit(child, path + pathStep(v, key), depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  return visit(root, "$", 0);
}

function jsonView(value: unknown): unknown {
  if (typeof value === "object" && value !== null && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    try {
      return (value as { toJSON(): unknown }).toJSON();
    } catch {
      return undefined;
    }
  }
  return value;
}

/**
 * Reads what `JsonPlusSerializer` (or {@link dumpsJsonPlus}) wrote, with the same result as
 * `JsonPlusSerializer.loadsTyped("json", data)`, except that an own `"__proto__"` key stays an own
 * key (LangGraph's reader assigns it, which sets the object's prototype and loses the key). It
 * revives synchronously and awaits LangChain's `load()` only for serialized LangChain objects.
 */
export async function loadsJsonPlus(data: Uint8Array | string): Promise<unknown> {
  const parsed: unknown = JSON.parse(typeof data === "string" ? data : decoder.decode(data));
  // LangChain objects (lc: 1) are revived by LangChain's async load(), innermost first, after the
  // synchronous pass has revived everything inside them, as LangGraph's reader does.
  const pending: Array<{ holder: Record<string, unknown>; key: string; value: Record<string, unknown> }> = [];
  const root = { value: undefined as unknown };
  root.value = reviveSync(parsed, root as unknown as Record<string, unknown>, "value", pending);
  for (const slot of pending) {
    slot.holder[slot.key] = await load(JSON.stringify(slot.value));
  }
  return root.value;
}

function reviveSync(
  value: unknown,
  holder: Record<string, unknown>,
  key: string,
  pending: Array<{ holder: Record<string, unknown>; key: string; value: Record<string, unknown> }>,
): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) value[i] = reviveSync(value[i], value as unknown as Record<string, unknown>, String(i), pending);
    return value;
  }
  const obj = value as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    const child = obj[k];
    if (typeof child === "object" && child !== null) {
      const revived = reviveSync(child, obj, k, pending);
      // Own-property write: for "__proto__", obj[k] = ... would set the prototype.
      if (revived !== child) Object.defineProperty(obj, k, { value: revived, enumerable: true, writable: true, configurable: true });
    }
  }
  if (obj.lc === 2) {
    if (obj.type === "undefined") return undefined;
    if (obj.type === "delta_snapshot" && Object.prototype.hasOwnProperty.call(obj, "value")) return new DeltaSnapshot(obj.value);
    if (obj.type === "constructor") return reviveConstructor(obj) ?? obj;
    return obj;
  }
  if (obj.lc === 1 && obj.type === "constructor" && Array.isArray(obj.id)) pending.push({ holder, key, value: obj });
  return obj;
}

/** The closed set of lc:2 constructor records LangGraph's reader revives; anything else stays inert data. */
function reviveConstructor(record: Record<string, unknown>): unknown {
  const id = record.id;
  if (!Array.isArray(id) || id.length !== 1) return undefined;
  const method = record.method;
  const args = record.args;
  const noMethod = method === undefined || method === null;
  const singleArray = Array.isArray(args) && args.length === 1 && Array.isArray(args[0]);
  switch (id[0]) {
    case "Set":
      return noMethod && singleArray ? new Set(args[0] as unknown[]) : undefined;
    case "Map":
      return noMethod && singleArray && (args[0] as unknown[]).every((e) => Array.isArray(e) && e.length === 2)
        ? new Map(args[0] as Array<[unknown, unknown]>)
        : undefined;
    case "RegExp":
      if (!noMethod || !Array.isArray(args) || args.length !== 2 || typeof args[0] !== "string" || typeof args[1] !== "string") return undefined;
      try {
        return new RegExp(args[0], args[1]);
      } catch {
        return undefined;
      }
    case "Error":
      return noMethod && Array.isArray(args) && args.length === 1 && typeof args[0] === "string" ? new Error(args[0]) : undefined;
    case "Uint8Array":
      return (noMethod || method === "from") && singleArray && (args[0] as unknown[]).every((b) => typeof b === "number" && Number.isInteger(b) && b >= 0 && b <= 255)
        ? new Uint8Array(args[0] as number[])
        : undefined;
    default:
      return undefined;
  }
}
