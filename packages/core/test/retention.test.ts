import type { RunnableConfig } from "@langchain/core/runnables";
import { TASKS, emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";

import { CapabilityMissingError, MemoryStore, ResumableSaver, type CheckpointStore } from "../src/index.js";

const thread = (id: string): RunnableConfig => ({ configurable: { thread_id: id, checkpoint_ns: "" } });

function checkpoint(fields: Partial<Checkpoint> = {}): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(0), ...fields };
}

describe("prune", () => {
  it("keeps the parent of an old-format (v < 4) checkpoint, whose pending sends it reads", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const root = await saver.put(thread("t"), checkpoint(), { source: "input", step: -1, parents: {} }, {});
    const parent = await saver.put(root, checkpoint(), { source: "loop", step: 0, parents: {} }, {});
    await saver.putWrites(parent, [[TASKS, { node: "work", args: { item: 1 } }]], "task-1");
    const child = await saver.put(parent, checkpoint({ v: 3 }), { source: "loop", step: 1, parents: {} }, {});
    const before = await saver.getTuple(child);
    expect((before?.checkpoint.channel_values as Record<string, unknown>)[TASKS]).toEqual([{ node: "work", args: { item: 1 } }]);
    const result = await saver.prune(["t"], { keepLast: 1 });
    expect(result).toMatchObject({ checkpoints: 1, keptForHistory: 1 });
    const after = await saver.getTuple(child);
    // The migration gives TASKS a version of its own at every read (the checkpoint has no other
    // channel to derive it from): compare what it migrated.
    expect(after?.checkpoint.channel_values).toEqual(before?.checkpoint.channel_values);
    expect(after?.parentConfig).toEqual(before?.parentConfig);
  });

  it("keeps a checkpoint only when keepLast and olderThan both keep it, and always the newest", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    let config = thread("t");
    const ids: string[] = [];
    for (let day = 1; day <= 5; day += 1) {
      config = await saver.put(config, checkpoint({ ts: new Date(Date.UTC(2026, 0, day)).toISOString() }), { source: "loop", step: day, parents: {} }, {});
      ids.push(config.configurable!.checkpoint_id as string);
    }
    const listed = async () => {
      const out: string[] = [];
      for await (const tuple of saver.list(thread("t"))) out.push(tuple.checkpoint.id);
      return out.reverse();
    };
    await saver.prune(["t"], { keepLast: 4, olderThan: new Date(Date.UTC(2026, 0, 3)) });
    expect(await listed()).toEqual(ids.slice(2));
    await saver.prune(["t"], { olderThan: Date.UTC(2027, 0, 1) });
    expect(await listed()).toEqual(ids.slice(4));
  });

  it("without thread ids prunes every thread the status index lists, and needs one", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    for (const id of ["a", "b"]) {
      let config = thread(id);
      for (let step = 0; step < 3; step += 1) config = await saver.put(config, checkpoint({ ts: new Date(Date.UTC(2026, 0, 1 + step)).toISOString() }), { source: "loop", step, parents: {} }, {});
    }
    const result = await saver.prune({ olderThan: Date.UTC(2030, 0, 1) });
    expect(result).toMatchObject({ threads: 2, checkpoints: 4 });
    const noIndex = new ResumableSaver(new MemoryStore(), { threadStatus: false });
    const error = await noIndex.prune({ keepLast: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CapabilityMissingError);
    expect((error as Error).message).toMatch(/prune\(\) without thread ids needs a store with capabilities\.threadStatus.*pass the thread ids instead/);
  });

  it("waits for this saver's writes to the thread in flight before it lists the thread", async () => {
    const inner = new MemoryStore();
    const calls: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const store: CheckpointStore = Object.assign(Object.create(inner) as CheckpointStore, {
      putWrites: async (request: Parameters<CheckpointStore["putWrites"]>[0]) => {
        await gate;
        await inner.putWrites(request);
        calls.push("putWrites landed");
      },
      listThreadRecords: async (threadId: string) => {
        calls.push("listThreadRecords");
        return inner.listThreadRecords(threadId);
      },
    });
    const saver = new ResumableSaver(store);
    let config = thread("t");
    for (let step = 0; step < 3; step += 1) config = await saver.put(config, checkpoint(), { source: "loop", step, parents: {} }, {});
    const writing = saver.putWrites(config, [["x", "y".repeat(600)]], "task-1");
    const pruning = saver.prune(["t"], { keepLast: 1 });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toEqual([]);
    release();
    await Promise.all([writing, pruning]);
    expect(calls).toEqual(["putWrites landed", "listThreadRecords"]);
  });

  it("is refused on a store without capabilities.retention, saying why, and nothing is removed", async () => {
    const inner = new MemoryStore();
    const store: CheckpointStore = Object.assign(Object.create(inner) as CheckpointStore, { capabilities: { ...inner.capabilities, retention: false } });
    const saver = new ResumableSaver(store);
    await saver.put(thread("t"), checkpoint(), { source: "input", step: -1, parents: {} }, {});
    const error = await saver.prune(["t"], { keepLast: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CapabilityMissingError);
    expect((error as Error).message).toMatch(/prune\(\) needs a store with capabilities\.retention.*lists a thread's records/);
    await expect(saver.deleteForRuns(["run-1"])).rejects.toBeInstanceOf(CapabilityMissingError);
  });
});
