import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import type { BlobRecord, CheckpointRecord, SerializedValue, StoreCommandEvent, WriteRecord } from "@resumable/core";

import { SqliteStore, type SqliteStoreOptions } from "../src/index.js";

const dirs: string[] = [];

/** A fresh temporary directory, removed by {@link removeTempDirs}. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "resumable-sqlite-"));
  dirs.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A set-up store on its own file. */
export async function freshStore(options: SqliteStoreOptions = {}): Promise<{ store: SqliteStore; path: string }> {
  const path = join(tempDir(), "store.db");
  const store = new SqliteStore(path, options);
  await store.setup();
  return { store, path };
}

export const text = (s: string): Uint8Array => new TextEncoder().encode(s);
export const json = (value: unknown): SerializedValue => ({ type: "json", data: text(JSON.stringify(value)) });
export const empty = (): SerializedValue => ({ type: "empty", data: new Uint8Array(0) });

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

export function blob(channel: string, version: string, value: SerializedValue = json(`${channel}@${version}`)): BlobRecord {
  return { channel, version, value };
}

export function write(taskId: string, idx: number, channel: string, value: unknown, taskPath = ""): WriteRecord {
  return { taskId, idx, channel, value: json(value), taskPath };
}

/** Checkpoint ids that sort as strings in creation order. */
export const cid = (i: number): string => `cp-${String(i).padStart(6, "0")}`;

/** Records the commands a store reports while `body` runs. */
export async function commands(store: SqliteStore, body: () => Promise<unknown>): Promise<string[]> {
  const seen: string[] = [];
  store.instrument((event: StoreCommandEvent) => seen.push(event.command));
  try {
    await body();
  } finally {
    store.instrument(undefined);
  }
  return seen;
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

export const decode = (value: SerializedValue): unknown => JSON.parse(new TextDecoder().decode(value.data));
