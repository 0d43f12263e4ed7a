// Requests per operation, counted by a wrapper around a real client (printed, so the figures in the
// README can be checked). Requests issued together (a batch get, a Query of writes) are one round
// trip of latency; the counts here are requests, the unit DynamoDB bills and throttles.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBSaver, type DynamoDBStore } from "../src/index.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, clientFor, freshStore, threadId } from "./helpers.js";

function checkpoint(id: string, versions: Record<string, number>, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_versions: versions, channel_values: values };
}

describe.each(EMULATORS)("requests to DynamoDB on %s", (emulator) => {
  let client: DynamoDBClient;
  let counter: FaultClient;
  let store: DynamoDBStore;
  let drop: () => Promise<void>;
  const measured: Record<string, number> = {};
  beforeAll(async () => {
    client = await clientFor(emulator);
    counter = new FaultClient(client);
    ({ store, drop } = await freshStore(counter, "round_trips", {}, client));
  });
  afterAll(async () => {
    console.log(`requests on ${emulator}: ${JSON.stringify(measured)}`);
    await drop();
    client.destroy();
  });

  it("put: two (blobs, then the checkpoint); putWrites: one per write and its batch's commit; getTuple: three in two round trips; history and list: a few whatever the depth", async () => {
    const saver = new DynamoDBSaver(store);
    const thread = threadId("rt");
    const measure = async (name: string, body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      measured[name] = Math.max(measured[name] ?? 0, counter.total);
      return counter.total;
    };
    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const depth = 40;
    for (let i = 0; i < depth; i++) {
      const id = `cp-${String(i).padStart(4, "0")}`;
      // Three channels change at every step, so each put carries a checkpoint item and three blobs.
      const values = { a: `a${i}`, b: [i, { deep: "x".repeat(100) }], c: new Uint8Array([i]) };
      const put = await measure("put", async () => {
        config = (await saver.put(config, checkpoint(id, { a: i + 1, b: i + 1, c: i + 1 }, values), { source: "loop", step: i, parents: {} }, { a: i + 1, b: i + 1, c: i + 1 })) as typeof config;
      });
      expect(put).toBe(2);
      // Three conditional puts in parallel, then the commit item that makes them visible together.
      expect(await measure("putWrites (3 writes)", () => saver.putWrites(config, [["a", `w${i}`], ["b", i], ["c", null]], `task-${i}`))).toBe(4);
    }
    expect(await measure("putWrites (special channels, upsert)", () => saver.putWrites(config, [["__interrupt__", 1], ["__resume__", 2]], "task-x"))).toBe(1);
    expect(await measure("putWrites (1 write)", () => saver.putWrites(config, [["a", "one"]], "task-one"))).toBe(1);
    expect(await measure("put (no changed channel)", () => saver.put(config, checkpoint("cp-9999", { a: depth, b: depth, c: depth }, {}), { source: "loop", step: depth, parents: {} }, {}))).toBe(1);
    config = { configurable: { ...config.configurable, checkpoint_id: `cp-${String(depth - 1).padStart(4, "0")}` } };
    expect(await measure("getTuple (by id)", () => saver.getTuple(config))).toBe(3);
    expect(await measure("getTuple (latest)", () => saver.getTuple({ configurable: { thread_id: thread } }))).toBe(3);
    // Every ancestor's blob is a full value, so the history stops at the parent; a channel no ancestor
    // seeds walks the whole chain (one page of up to 100 ancestors).
    expect(await measure("getDeltaChannelHistory (seed at the parent)", () => saver.getDeltaChannelHistory({ config, channels: ["a"] }))).toBe(3);
    expect(await measure("getDeltaChannelHistory (40 ancestors, no seed)", () => saver.getDeltaChannelHistory({ config, channels: ["never-written"] }))).toBe(2);
    const history = await saver.getDeltaChannelHistory({ config, channels: ["a"] });
    expect(history.a?.writes.map(([, , value]) => value)).toEqual([`w${depth - 2}`]);
    const listed = await measure("list (41 checkpoints, 50 per page)", async () => {
      let n = 0;
      for await (const _ of saver.list({ configurable: { thread_id: thread } })) n++;
      expect(n).toBe(depth + 1);
    });
    // One Query of checkpoints, two batch gets of blobs (100 keys each at most), one Query of writes.
    expect(listed).toBe(4);
    expect(await measure("deleteThread", () => saver.deleteThread(thread))).toBeLessThanOrEqual(2 + 2 + Math.ceil((120 + 124 + 40) / 25)); // checkpoints; blobs, writes and 40 batch commits
  });

  it("getDeltaChannelHistory walks hundreds of ancestors in the same few requests at any depth, and finds a seed far up", { timeout: 300_000 }, async () => {
    const saver = new DynamoDBSaver(store);
    const thread = threadId("deep");
    // A channel with a version at every step and no value (as a DeltaChannel between snapshots), and
    // one write to it per checkpoint.
    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const configs: Array<typeof config> = [];
    for (let i = 0; i < 260; i++) {
      // "e" holds a value at step 5 only: its seed, 253 ancestors up from the last checkpoint.
      const values = i === 5 ? { e: "seed" } : {};
      config = (await saver.put(config, checkpoint(`cp-${String(i).padStart(4, "0")}`, { d: i + 1, e: i + 1 }, values), { source: "loop", step: i, parents: {} }, { d: i + 1, e: i + 1 })) as typeof config;
      await saver.putWrites(config, [["d", i], ["e", i]], `task-${i}`);
      configs.push(config);
    }
    const requests = async (depth: number) => {
      counter.reset();
      const history = await saver.getDeltaChannelHistory({ config: configs[depth]!, channels: ["d"] });
      expect(history["d"]?.writes.map(([, , value]) => value)).toEqual(Array.from({ length: depth }, (_, i) => i));
      expect(history["d"]?.seed).toBeUndefined();
      return counter.total;
    };
    const shallow = await requests(150);
    const deep = await requests(259);
    measured["getDeltaChannelHistory (150 / 259 ancestors, no seed)"] = deep;
    // Ancestors (a first page of 100, then 1 MB pages), a batch get of the first 100 versions, one
    // Query of types for the rest, one Query of writes.
    expect(deep).toBe(shallow);
    expect(deep).toBeLessThanOrEqual(5);
    const seeded = await saver.getDeltaChannelHistory({ config: configs[259]!, channels: ["e", "d"] });
    expect(seeded["e"]?.seed).toBe("seed");
    expect(seeded["e"]?.writes.map(([, , value]) => value)).toEqual(Array.from({ length: 259 - 5 }, (_, i) => i + 5));
    expect(seeded["d"]?.writes).toHaveLength(259);
  });
});
