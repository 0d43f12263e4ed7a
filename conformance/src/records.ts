/**
 * Builders of serialized records for store-level tests: what a backend's own tests hand its
 * `CheckpointStore` directly, without a saver in between.
 *
 * @module
 */
import type { BlobRecord, CheckpointRecord, SerializedValue, WriteRecord } from "@resumable/core";

/** UTF-8 bytes of a string. */
export const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** A value serialized as JSON, type `"json"`. */
export const json = (value: unknown): SerializedValue => ({ type: "json", data: text(JSON.stringify(value)) });

/** The "has a version but no value" marker. */
export const empty = (): SerializedValue => ({ type: "empty", data: new Uint8Array(0) });

/** Reads back a value built by {@link json}. */
export const decode = (value: SerializedValue): unknown => JSON.parse(new TextDecoder().decode(value.data));

/** A checkpoint record in the root namespace, with `extra` overriding any field. */
export function record(threadId: string, checkpointId: string, extra: Partial<CheckpointRecord> = {}): CheckpointRecord {
  return {
    threadId,
    checkpointNs: "",
    checkpointId,
    parentCheckpointId: undefined,
    checkpoint: json({ id: checkpointId }),
    metadata: json({ step: 0 }),
    metadataJson: { source: "loop", step: 0 },
    channelVersions: {},
    ...extra,
  };
}

/** A blob whose value names its channel and version unless one is given. */
export function blob(channel: string, version: string, value: SerializedValue = json(`${channel}@${version}`)): BlobRecord {
  return { channel, version, value };
}

/** A pending write with a JSON value. */
export function write(taskId: string, idx: number, channel: string, value: unknown, taskPath = ""): WriteRecord {
  return { taskId, idx, channel, value: json(value), taskPath };
}

/** Checkpoint ids that sort as strings in creation order. */
export const cid = (i: number): string => `cp-${String(i).padStart(6, "0")}`;

/** Everything an async iterable yields, as an array. */
export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
