import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";

import {
  CorruptRecordError,
  InvalidConfigError,
  MemoryStore,
  MissingThreadIdError,
  ResumableSaver,
  SerializationError,
  ValueTooLargeError,
  type BlobRecord,
  type PutWritesRequest,
} from "../src/index.js";

const meta = { source: "loop" as const, step: 0, parents: {} };

function checkpoint(values: Record<string, unknown>, versions?: Record<string, number>): Checkpoint {
  const base = emptyCheckpoint();
  return {
    ...base,
    id: uuid6(0),
    channel_values: values,
    channel_versions: versions ?? Object.fromEntries(Object.keys(values).map((k) => [k, 1])),
  };
}

async function snapshot(store: MemoryStore, threadId: string) {
  const saver = new ResumableSaver(store);
  const out = [];
  for await (const t of saver.list({ configurable: { thread_id: threadId } })) out.push(t);
  return out;
}

describe("bad input gets a typed error naming what was wrong, and stored data stays as it was", () => {
  it("missing thread_id names thread_id", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const err = await saver.put({ configurable: {} }, checkpoint({}), meta, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingThreadIdError);
    expect((err as MissingThreadIdError).field).toBe("thread_id");
    expect(String(err)).toMatch(/configurable\.thread_id/);
    await expect(saver.putWrites({ configurable: { checkpoint_id: "x" } }, [["a", 1]], "t")).rejects.toBeInstanceOf(MissingThreadIdError);
  });

  it("a function in state names the channel and the path, and nothing is written", async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    const first = await saver.put({ configurable: { thread_id: "t1" } }, checkpoint({ a: 1 }), meta, { a: 1 });
    const before = await snapshot(store, "t1");
    const bad = checkpoint({ a: 1, items: [{ ok: 1 }, { callback: () => 1 }] }, { a: 1, items: 2 });
    const err = await saver.put(first, bad, meta, { items: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SerializationError);
    expect((err as SerializationError).message).toContain('channel "items"');
    expect((err as SerializationError).path).toBe("$[1].callback");
    expect(await snapshot(store, "t1")).toEqual(before);
  });

  it("a cycle or a bigint in a pending write names the channel and task", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "t2" } }, checkpoint({}), meta, {});
    const cyclic: Record<string, unknown> = { name: "x" };
    cyclic.self = cyclic;
    await expect(saver.putWrites(config, [["notes", cyclic]], "task-1")).rejects.toThrow(/write to channel "notes" \(task task-1\) at \$\.self/);
    await expect(saver.putWrites(config, [["count", 10n]], "task-1")).rejects.toThrow(/bigint/);
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
  });

  it("a value over maxValueBytes names the channel, its size and the limit", async () => {
    const saver = new ResumableSaver(new MemoryStore(), { maxValueBytes: 1024 });
    const err = await saver
      .put({ configurable: { thread_id: "t3" } }, checkpoint({ big: "x".repeat(5000) }), meta, { big: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValueTooLargeError);
    expect((err as ValueTooLargeError).limitBytes).toBe(1024);
    expect((err as Error).message).toMatch(/channel "big" is 4\.9 KB serialized, over the limit of 1\.0 KB/);
    expect(await saver.getTuple({ configurable: { thread_id: "t3" } })).toBeUndefined();
  });

  it("a non-string thread id or namespace is refused, not coerced", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    await expect(saver.put({ configurable: { thread_id: { $ne: 1 } } }, checkpoint({}), meta, {})).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(saver.put({ configurable: { thread_id: "t", checkpoint_ns: 5 } }, checkpoint({}), meta, {})).rejects.toThrow(/checkpoint_ns/);
  });
});

describe("chunking values over the store's item limit", () => {
  it("splits, reassembles, and detects a missing or altered chunk", async () => {
    const store = new MemoryStore({ maxItemBytes: 100 });
    const saver = new ResumableSaver(store);
    const text = Array.from({ length: 300 }, (_, i) => String.fromCodePoint(0x1f600 + (i % 50))).join("");
    const config = await saver.put({ configurable: { thread_id: "c" } }, checkpoint({ text }), meta, { text: 1 });
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ text });
    const threads = (store as unknown as { threads: Map<string, { chunks: Map<string, Map<number, { data: Uint8Array }>> }> }).threads;
    const chunks = [...threads.get("c")!.chunks.values()][0]!;
    expect(chunks.size).toBeGreaterThan(5);
    const part = chunks.get(2)!.data;
    part[0] = part[0]! ^ 0xff;
    await expect(saver.getTuple(config)).rejects.toBeInstanceOf(CorruptRecordError);
    chunks.delete(3);
    await expect(saver.getTuple(config)).rejects.toThrow(/missing chunk 3/);
  });
});

describe("ordering", () => {
  it("a checkpoint is not stored before the writes issued before it have landed", async () => {
    const events: string[] = [];
    class SlowWrites extends MemoryStore {
      override async putWrites(request: PutWritesRequest): Promise<void> {
        await new Promise((resolve) => setTimeout(resolve, 50));
        events.push(`writes ${request.writes[0]!.channel}`);
        await super.putWrites(request);
      }
      override async putCheckpoint(request: Parameters<MemoryStore["putCheckpoint"]>[0]): Promise<void> {
        events.push(`checkpoint ${request.record.checkpointId === first.id ? "first" : "second"}`);
        await super.putCheckpoint(request);
      }
    }
    const first = checkpoint({});
    const saver = new ResumableSaver(new SlowWrites());
    const config = await saver.put({ configurable: { thread_id: "o" } }, first, meta, {});
    const writes = saver.putWrites(config, [["a", 1]], "task");
    const put = saver.put(config, { ...checkpoint({}), id: uuid6(1) }, { ...meta, step: 1 }, {});
    await Promise.all([writes, put]);
    expect(events).toEqual(["checkpoint first", "writes a", "checkpoint second"]);
  });

  it("pending writes come back in writesSortKey order: task path, task id, index", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "w" } }, checkpoint({}), meta, {});
    await saver.putWrites(config, [["x", "b1"], ["y", "b2"]], "task-b", "~__pregel_pull, 2");
    await saver.putWrites(config, [["x", "a1"]], "task-a", "~__pregel_pull, 10");
    await saver.putWrites(config, [["x", "input"]], "00000000-0000-0000-0000-000000000000");
    const writes = (await saver.getTuple(config))?.pendingWrites?.map((w) => w[2]);
    expect(writes).toEqual(["input", "a1", "b1", "b2"]);
  });
});

describe("delta blobs", () => {
  it("a blob stored as a delta over an earlier version reads back as the whole list", async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    const first = checkpoint({ log: ["a", "b"] });
    const config = await saver.put({ configurable: { thread_id: "d" } }, first, meta, { log: 1 });
    // What a delta writer stores: version 2 of "log" is ["c"] appended to version 1.
    const [, data] = await saver.serde.dumpsTyped(["c"]);
    const record = (await store.getCheckpoint({ threadId: "d", checkpointNs: "" }))!.record;
    const delta: BlobRecord = { channel: "log", version: "2", baseVersion: "1", value: { type: "json", data } };
    await store.putCheckpoint({ record, blobs: [delta], chunks: [] });
    const second = { ...checkpoint({}), id: uuid6(1), channel_versions: { log: 2 } };
    const next = await saver.put(config, second, { ...meta, step: 1 }, {});
    expect((await saver.getTuple(next))?.checkpoint.channel_values).toEqual({ log: ["a", "b", "c"] });
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ log: ["a", "b"] });
  });
});
