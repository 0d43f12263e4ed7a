// copyThread must hold on stores that return only what the contract requires: a checkpoint's blobs at
// its channel versions, without the rest of its delta ranges (core reads those link by link), and no
// chunks with the checkpoint. A copy that trusted getCheckpoint to return whole delta chains would
// copy checkpoints whose values the copy cannot rebuild.
import { MemoryStore, type CheckpointStore, type StoredCheckpoint } from "@resumable/core";
import { describe, expect, it } from "vitest";

import { copyThread, probeSubject, runCategory, toTarget } from "../src/index.js";

/** The reference store, answering getCheckpoint and listCheckpoints with the minimum the contract allows. */
function minimalStore(): CheckpointStore {
  const inner = new MemoryStore();
  const minimal = (stored: StoredCheckpoint): StoredCheckpoint => {
    const versions = stored.record.channelVersions;
    const { chunks: _chunks, ...rest } = stored;
    return { ...rest, blobs: stored.blobs.filter((b) => versions[b.channel] === b.version) };
  };
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === "getCheckpoint") {
        return async (scope: Parameters<CheckpointStore["getCheckpoint"]>[0]) => {
          const stored = await target.getCheckpoint(scope);
          return stored && minimal(stored);
        };
      }
      if (property === "listCheckpoints") {
        return async function* (query: Parameters<CheckpointStore["listCheckpoints"]>[0]) {
          for await (const stored of target.listCheckpoints(query)) yield minimal(stored);
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe("copyThread on a store that returns only the blobs at a checkpoint's versions", () => {
  it("copies delta chains whole: every copied state reads back as the source's", async () => {
    const target = toTarget(() => minimalStore());
    const result = await runCategory(target, await probeSubject(target), copyThread);
    const failed = result.checks.filter((c) => c.status === "failed").map((c) => `${c.name}: ${c.error}`);
    expect(failed).toEqual([]);
    expect(result.checks.filter((c) => c.status === "passed").length).toBeGreaterThanOrEqual(5);
  });
});
