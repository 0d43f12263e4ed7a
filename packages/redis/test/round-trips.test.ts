import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, describe, expect, it } from "vitest";

import { RedisSaver } from "../src/index.js";
import { TestClients, prefix, recordingClient, threadId } from "./helpers.js";

const clients = new TestClients();
afterAll(() => clients.closeAll());

/** Round trips measured here are printed, so the numbers in the README can be checked. */
const measured: Record<string, number> = {};
afterAll(() => console.log(`round trips: ${JSON.stringify(measured)}`));

function checkpoint(id: string, versions: Record<string, number>, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_versions: versions, channel_values: values };
}

describe("round trips to Redis (one client call each)", () => {
  it("is one per put, putWrites and getTuple, one per getDeltaChannelHistory whatever the depth, two per deleteThread", async () => {
    const counter = recordingClient(await clients.standalone());
    const saver = new RedisSaver(counter.client, { keyPrefix: prefix("rt") });
    await saver.setup();
    const thread = threadId("rt");
    const measure = async (name: string, body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      measured[name] = Math.max(measured[name] ?? 0, counter.commands.length);
      return counter.commands.length;
    };
    // A new thread: getTuple finds nothing (and learns the thread is not indexed yet).
    expect(await measure("getTuple (new thread)", () => saver.getTuple({ configurable: { thread_id: thread } }))).toBe(1);
    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const depth = 40;
    for (let i = 0; i < depth; i++) {
      const id = `cp-${String(i).padStart(4, "0")}`;
      const values = { a: `a${i}`, b: [i, { deep: "x".repeat(100) }], c: new Uint8Array([i]) };
      const put = await measure(i === 0 ? "put (first of a thread)" : "put", async () => {
        config = (await saver.put(config, checkpoint(id, { a: i + 1, b: i + 1, c: i + 1 }, values), { source: "loop", step: i, parents: {} }, { a: i + 1, b: i + 1, c: i + 1 })) as typeof config;
      });
      // The first put of a thread adds it to the thread index first (ZADD), then runs the script.
      expect(put).toBe(i === 0 ? 2 : 1);
      expect(await measure("putWrites", () => saver.putWrites(config, [["a", `w${i}`], ["b", i], ["c", null]], `task-${i}`))).toBe(1);
    }
    expect(await measure("getTuple", () => saver.getTuple(config))).toBe(1);
    expect(await measure("getTuple (latest)", () => saver.getTuple({ configurable: { thread_id: thread } }))).toBe(1);
    expect(await measure("getDeltaChannelHistory (by id)", () => saver.getDeltaChannelHistory({ config, channels: ["a", "never-written"] }))).toBe(1);
    expect(await measure("getDeltaChannelHistory (latest)", () => saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["never-written"] }))).toBe(2);
    const history = await saver.getDeltaChannelHistory({ config, channels: ["a"] });
    expect(history.a?.writes.map(([, , value]) => value)).toEqual([`w${depth - 2}`]);
    const listed = await measure("list (40 checkpoints, 50 per page)", async () => {
      let n = 0;
      for await (const _ of saver.list({ configurable: { thread_id: thread } })) n++;
      expect(n).toBe(depth);
    });
    expect(listed).toBe(1);
    // A fresh saver (a new process) on a thread it never saw reads it first, as the runtime does; that
    // read tells the store the thread is indexed, so the put is one script.
    const other = new RedisSaver(counter.client, { keyPrefix: saver.store.keyPrefix });
    expect(await measure("getTuple (new process)", () => other.getTuple(config))).toBe(1);
    expect(await measure("put (known thread, new process)", () => other.put(config, checkpoint("cp-9999", { a: 99 }, { a: "x" }), { source: "loop", step: 99, parents: {} }, { a: 99 }))).toBe(1);
    expect(await measure("deleteThread", () => saver.deleteThread(thread))).toBe(2);
    expect(counter.commands.every((c) => c === "EVALSHA" || c === "ZREM")).toBe(true);
  });
});
