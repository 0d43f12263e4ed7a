// prune on Redis, counted in the keys themselves rather than through the store's own listing: the
// members of each sorted set (checkpoints, blobs, writes) and the chunk fields go down by exactly what
// prune reports, other threads keep every member, and a prune is two commands whatever the thread's length.
import { chatGraph, chatTurns } from "@resumable/conformance";
import { ResumableSaver, type RetentionResult } from "@resumable/core";
import type { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";

import { RedisStore } from "../src/index.js";
import { TestClients, prefix, recordingClient, threadId } from "./helpers.js";

const clients = new TestClients();
afterAll(() => clients.closeAll());

type Counts = { checkpoints: number; writes: number; blobs: number; chunks: number };

/** Members per kind over every namespace of the thread, and chunk fields (`<hash>\0<index>`). */
async function counts(redis: Redis, keyPrefix: string, thread: string): Promise<Counts> {
  const base = `${keyPrefix}{${thread}}`;
  const out: Counts = { checkpoints: 0, writes: 0, blobs: 0, chunks: 0 };
  for (const ns of await redis.zrange(`${base}:n`, 0, -1)) {
    out.checkpoints += await redis.zcard(`${base}:c:${ns}`);
    out.blobs += await redis.zcard(`${base}:b:${ns}`);
    out.writes += await redis.zcard(`${base}:w:${ns}`);
  }
  out.chunks = (await redis.hkeys(`${base}:k`)).filter((field) => field.includes("\u0000")).length;
  return out;
}

function minus(before: Counts, removed: RetentionResult): Counts {
  return { checkpoints: before.checkpoints - removed.checkpoints, writes: before.writes - removed.writes, blobs: before.blobs - removed.blobs, chunks: before.chunks - removed.chunks };
}

describe("RedisStore retention", () => {
  it("removes exactly the members prune and deleteForRuns report, and no member of another thread", async () => {
    const redis = await clients.standalone();
    const keyPrefix = prefix("retention");
    const store = new RedisStore(redis, { keyPrefix });
    await store.setup();
    const saver = new ResumableSaver(store);
    for (const kind of ["plain", "delta", "subgraph"] as const) {
      const thread = threadId(kind);
      const other = threadId(`other-${kind}`);
      await chatTurns(chatGraph(kind, saver), thread, 0, 6, thread);
      await chatTurns(chatGraph(kind, saver), other, 0, 3, other);
      const before = await counts(redis, keyPrefix, thread);
      const otherBefore = await counts(redis, keyPrefix, other);
      const removed = await saver.prune([thread], { keepLast: 2 });
      expect(removed.checkpoints, kind).toBeGreaterThan(0);
      expect(removed.blobs, kind).toBeGreaterThan(0);
      expect(await counts(redis, keyPrefix, thread), kind).toEqual(minus(before, removed));
      expect(await counts(redis, keyPrefix, other), kind).toEqual(otherBefore);
    }
    const rolled = threadId("rolled");
    await chatTurns(chatGraph("plain", saver), rolled, 0, 6, rolled);
    const before = await counts(redis, keyPrefix, rolled);
    const removed = await saver.deleteForRuns([`${rolled}-4`, `${rolled}-5`]);
    expect(removed.chunks).toBeGreaterThan(0);
    expect(await counts(redis, keyPrefix, rolled)).toEqual(minus(before, removed));
  });

  it("prunes a thread in two commands whatever its length", async () => {
    const recording = recordingClient(await clients.standalone());
    const store = new RedisStore(recording.client, { keyPrefix: prefix("retention-rt") });
    await store.setup();
    const saver = new ResumableSaver(store);
    for (const turns of [3, 12]) {
      const thread = threadId(`rt-${turns}`);
      await chatTurns(chatGraph("delta", saver), thread, 0, turns);
      recording.reset();
      expect((await saver.prune([thread], { keepLast: 2 })).checkpoints).toBeGreaterThan(0);
      expect(recording.commands).toHaveLength(2);
    }
  });
});
