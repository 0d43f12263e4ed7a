import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { records } from "@resumable/conformance";
import type { StoreCommandEvent } from "@resumable/core";

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

// Record builders shared with every backend's store-level tests.
export const { text, json, empty, record, blob, write, cid, collect, decode } = records;
