/**
 * Key names and the byte layout of what the store keeps in them. The Lua side of the layout is
 * described in lua.ts.
 *
 * @module
 */
import {
  canonicalJsonText,
  type BlobRecord,
  type CheckpointRecord,
  type ChunkRecord,
  type ChunkRef,
  type SerializedValue,
  type WriteRecord,
} from "@resumable/core";

/**
 * Escapes one key component: `%`, the hash-tag braces, the separator `:` and the glob characters
 * become `%XX`. Injective (so thread `a:b` and thread `a` in namespace `b` never meet) and it keeps
 * `{`/`}` out of the hash tag, so the tag is always the whole thread id and never empty.
 */
export function encodeComponent(value: string): string {
  return value.replace(/[%{}:*?[\]\\]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

/** The inverse of {@link encodeComponent}. */
export function decodeComponent(value: string): string {
  return value.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** The base key of a thread: every key of the thread starts with it and shares its hash tag. */
export function threadBase(prefix: string, threadId: string): string {
  return `${prefix}{${encodeComponent(threadId)}}`;
}

/** The global thread index (a sorted set outside every thread's slot) and the layout marker. */
export const indexKey = (prefix: string): string => `${prefix}threads`;
export const layoutKey = (prefix: string): string => `${prefix}layout`;

/**
 * The status index's base key: `<base>:<state>` are sorted sets of one fixed hash tag (so one slot in
 * a Cluster). The tag holds a `:`, which escaped ids never do, so it can never be a thread's tag.
 */
export const statusIndexSuffix = (prefix: string): string => `{${prefix}:status}`;
export const statusIndexKey = (prefix: string): string => `${prefix}${statusIndexSuffix(prefix)}`;
/** A member of a status index: the thread id and the record's updatedAt (equal scores order by thread id). */
export const statusMember = (threadId: string, updatedAt: string): string => `${threadId}\u0000${updatedAt}`;

/** A member of the thread index: the thread id and the token its `B:m` hash holds. */
export const indexMember = (threadId: string, token: string): string => `${threadId}\u0000${token}`;

const NL = 0x0a;

/** Hashes a value references (shared pieces, then the chunks of a split value): the refs line. */
function refsLine(values: SerializedValue[]): string {
  const hashes: string[] = [];
  for (const value of values) {
    hashes.push(...(value.refs ?? []));
    if (value.chunkRef) hashes.push(value.chunkRef.hash);
  }
  return hashes.join(",");
}

function valueHeader(value: SerializedValue): Record<string, unknown> {
  const header: Record<string, unknown> = { t: value.type };
  if (value.refs) header.r = value.refs;
  if (value.chunkRef) header.c = value.chunkRef;
  return header;
}

const buf = (data: Uint8Array): Buffer => (Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));

function pack(refs: string, header: Record<string, unknown>, ...data: Uint8Array[]): Buffer {
  return Buffer.concat([Buffer.from(`${refs}\n${JSON.stringify(header)}\n`, "utf8"), ...data.map(buf)]);
}

/** A blob's packed value (the member is `channel\0version\0` + this, built by the script). */
export function packBlob(blob: BlobRecord): Buffer {
  const header = valueHeader(blob.value);
  if (blob.baseVersion !== undefined) header.b = blob.baseVersion;
  return pack(refsLine([blob.value]), header, blob.value.data);
}

/** A write's packed value (the member is `checkpoint\0task\0idx\0` + this). */
export function packWrite(write: WriteRecord): Buffer {
  return pack(refsLine([write.value]), { ...valueHeader(write.value), ch: write.channel, p: write.taskPath }, write.value.data);
}

/**
 * A checkpoint record's packed value. The header holds what the scripts read (parent, versions, delta
 * roots, metadata per key as canonical JSON text for filters) and the two values' headers; the bytes
 * of the checkpoint and then of the metadata follow.
 */
export function packRecord(record: CheckpointRecord): Buffer {
  const mk: string[] = [];
  for (const key of Object.keys(record.metadataJson)) {
    const text = canonicalJsonText(record.metadataJson[key]);
    if (text !== undefined) mk.push(JSON.stringify(key), text);
  }
  const header: Record<string, unknown> = {
    v: record.channelVersions,
    mk,
    cv: valueHeader(record.checkpoint),
    cl: record.checkpoint.data.byteLength,
    mv: valueHeader(record.metadata),
  };
  if (record.parentCheckpointId !== undefined) header.p = record.parentCheckpointId;
  if (record.deltaRoots) header.dr = record.deltaRoots;
  return pack(refsLine([record.checkpoint, record.metadata]), header, record.checkpoint.data, record.metadata.data);
}

/** A filter as the list script takes it: key as JSON text, value as canonical JSON text ('' = absent). */
export function filterArgs(filter: Record<string, unknown> | undefined): string[] {
  if (!filter) return [];
  return Object.keys(filter).flatMap((key) => [JSON.stringify(key), canonicalJsonText(filter[key]) ?? ""]);
}

// ------------------------------------------------------------------------------------------------
// Reading members back

/** Splits off `parts` NUL-terminated leading parts; returns them and where the packed value starts. */
function leading(member: Buffer, parts: number): { parts: string[]; at: number } {
  const out: string[] = [];
  let at = 0;
  for (let i = 0; i < parts; i += 1) {
    const end = member.indexOf(0, at);
    out.push(member.toString("utf8", at, end));
    at = end + 1;
  }
  return { parts: out, at };
}

/** The JSON header of a packed value starting at `at`, and where its bytes start. */
function unpack(member: Buffer, at: number): { header: Record<string, unknown>; data: number } {
  const refsEnd = member.indexOf(NL, at);
  const headerEnd = member.indexOf(NL, refsEnd + 1);
  return { header: JSON.parse(member.toString("utf8", refsEnd + 1, headerEnd)) as Record<string, unknown>, data: headerEnd + 1 };
}

const bytes = (b: Buffer): Uint8Array => new Uint8Array(b.buffer, b.byteOffset, b.byteLength);

function toValue(header: Record<string, unknown>, data: Buffer): SerializedValue {
  const value: SerializedValue = { type: String(header.t), data: bytes(data) };
  if (Array.isArray(header.r)) value.refs = header.r as string[];
  if (header.c) value.chunkRef = header.c as ChunkRef;
  return value;
}

export function readBlob(member: Buffer): BlobRecord {
  const { parts, at } = leading(member, 2);
  const { header, data } = unpack(member, at);
  const blob: BlobRecord = { channel: parts[0]!, version: parts[1]!, value: toValue(header, member.subarray(data)) };
  if (typeof header.b === "string") blob.baseVersion = header.b;
  return blob;
}

export function readWrite(member: Buffer): WriteRecord {
  const { parts, at } = leading(member, 3);
  const { header, data } = unpack(member, at);
  return { taskId: parts[1]!, idx: Number(parts[2]), channel: String(header.ch), value: toValue(header, member.subarray(data)), taskPath: String(header.p ?? "") };
}

/** The record header's fields as a history ancestor needs them. */
export interface RecordHeader {
  p?: string;
  v: Record<string, string>;
  dr?: Record<string, string>;
  mk: string[];
  cv: Record<string, unknown>;
  cl: number;
  mv: Record<string, unknown>;
}

export function parseRecordHeader(text: Buffer): RecordHeader {
  return JSON.parse(text.toString("utf8")) as RecordHeader;
}

export function readRecord(member: Buffer, threadId: string, checkpointNs: string): CheckpointRecord {
  const { parts, at } = leading(member, 1);
  const { header, data } = unpack(member, at);
  const h = header as unknown as RecordHeader;
  const mk = h.mk;
  const pairs: string[] = [];
  for (let i = 0; i < mk.length; i += 2) pairs.push(`${mk[i]}:${mk[i + 1]}`);
  const record: CheckpointRecord = {
    threadId,
    checkpointNs,
    checkpointId: parts[0]!,
    parentCheckpointId: h.p,
    checkpoint: toValue(h.cv, member.subarray(data, data + h.cl)),
    metadata: toValue(h.mv, member.subarray(data + h.cl)),
    // Parsed as one object text, so a key named __proto__ stays an own key.
    metadataJson: JSON.parse(`{${pairs.join(",")}}`) as Record<string, unknown>,
    channelVersions: h.v,
  };
  if (h.dr) record.deltaRoots = h.dr;
  return record;
}

/** What a blob or write head (a member without its bytes, as the retention listing returns it) says. */
export interface MemberHead {
  /** The member's leading parts: channel and version of a blob; checkpoint id, task id and idx of a write. */
  parts: string[];
  header: Record<string, unknown>;
}

/** Reads a head: `parts` NUL-terminated leading parts, then the refs line and the header line. */
export function readHead(head: Buffer, parts: number): MemberHead {
  const { parts: leadingParts, at } = leading(head, parts);
  return { parts: leadingParts, header: unpack(head, at).header };
}

export function readChunks(reply: unknown): ChunkRecord[] {
  return ((reply ?? []) as Array<[Buffer, number, Buffer]>).map(([hash, index, data]) => ({ hash: hash.toString("utf8"), index: Number(index), data: bytes(data) }));
}
