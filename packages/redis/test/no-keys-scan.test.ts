import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { records } from "@resumable/conformance";
import { startRedis, type DisposableRedisServer } from "@resumable/test-servers";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { RedisSaver, RedisStore } from "../src/index.js";
import { recordingClient } from "./helpers.js";

const { record, blob, json, cid, write } = records;

// A server of this file's own, so that its command statistics count only what this file sends:
// the client wrapper sees what the store sends, the server's statistics also what scripts run.
let server: DisposableRedisServer;
let raw: Redis;
beforeAll(async () => {
  server = await startRedis();
  raw = new Redis(server.url);
});
afterAll(async () => {
  await raw?.quit();
  await server?.stop();
});

/** Calls per command name from INFO commandstats, including those run inside scripts. */
async function commandStats(): Promise<Record<string, number>> {
  const info = await raw.info("commandstats");
  return Object.fromEntries([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

const FORBIDDEN = ["keys", "scan", "hscan", "sscan", "zscan"];

describe("no code path issues KEYS or SCAN", () => {
  it("runs every store call and a real graph, with the client wrapped and the server's statistics checked", async () => {
    await raw.config("RESETSTAT");
    const recording = recordingClient(raw);
    const store = new RedisStore(recording.client, { keyPrefix: "nokeys:", ttlSeconds: 3600 });
    const saver = new RedisSaver(store);
    await saver.setup();
    // A graph run with a subgraph-free chain, time travel and a filter, through the saver.
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = new StateGraph(State)
      .addNode("one", () => ({ log: ["one"] }))
      .addNode("two", () => ({ log: ["two"] }))
      .addEdge(START, "one")
      .addEdge("one", "two")
      .addEdge("two", END)
      .compile({ checkpointer: saver });
    for (let t = 0; t < 130; t++) await graph.invoke({ log: [`start-${t}`] }, { configurable: { thread_id: `graph-${t}` } });
    const history = [];
    for await (const state of graph.getStateHistory({ configurable: { thread_id: "graph-1" } })) history.push(state);
    expect(history.length).toBeGreaterThan(2);
    // Every store call directly, list across all threads (more than one page of the thread index).
    const thread = "direct";
    await store.putCheckpoint({ record: record(thread, cid(1), { channelVersions: { a: "1" } }), blobs: [blob("a", "1")], chunks: [{ hash: "h", index: 0, data: new Uint8Array([1]) }] });
    await store.putCheckpoint({ record: record(thread, cid(2), { checkpointNs: "child:x", parentCheckpointId: undefined }), blobs: [], chunks: [] });
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [write("t", 0, "a", 1)], chunks: [], mode: "ignore" });
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [write("t", -3, "__interrupt__", 1)], chunks: [], mode: "upsert" });
    await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
    await store.getHistory({ threadId: thread, checkpointNs: "", checkpointId: cid(1), channels: ["a"] });
    await store.getBlobs({ threadId: thread, checkpointNs: "" }, [{ channel: "a", version: "1" }]);
    await store.getChunks(thread, ["h"]);
    let all = 0;
    for await (const _ of store.listCheckpoints({})) all++;
    expect(all).toBeGreaterThan(130 * 3);
    let filtered = 0;
    for await (const _ of store.listCheckpoints({ filter: { source: "input" } })) filtered++;
    expect(filtered).toBe(130);
    for await (const _ of store.listCheckpoints({ threadId: thread, before: cid(2), limit: 1 })) void _;
    // Leases and thread status: every call, fenced writes included, and listing every state.
    const lease = await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
    const fence = { token: lease!.token, workerId: "w" };
    await store.renewLease(lease!, 60_000);
    await store.putCheckpoint({ record: record(thread, cid(3)), blobs: [], chunks: [], fence, status: { state: "pending", updatedAt: Date.now() } });
    await store.putWrites({
      threadId: thread,
      checkpointNs: "",
      checkpointId: cid(3),
      writes: [write("t", -1, "__error__", { message: "x" })],
      chunks: [],
      mode: "upsert",
      fence,
      status: { checkpointId: cid(3), state: "failed", error: "x", updatedAt: Date.now() },
    });
    await store.patchThreadStatus({ threadId: thread, patch: { checkpointId: cid(3), state: "dead", updatedAt: Date.now() }, fence });
    await store.getThreadStatus(thread);
    await store.getLease(thread);
    await store.releaseLease(lease!);
    expect((await store.listThreads({ limit: 1000 })).length).toBeGreaterThan(130);
    expect((await store.listThreads({ states: ["dead"], olderThan: Date.now() + 1, limit: 10 })).map((r) => r.threadId)).toEqual([thread]);
    await store.deleteThread(thread);
    for (let t = 0; t < 130; t++) await saver.deleteThread(`graph-${t}`);
    await store.pruneThreadIndex({ graceMs: 0 });
    await store.putCheckpoint({ record: record("last", cid(1)), blobs: [json(1)].map((v) => ({ channel: "x", version: "1", value: v })), chunks: [] });

    const sent = new Set(recording.commands);
    expect([...sent].filter((c) => FORBIDDEN.includes(c.toLowerCase()))).toEqual([]);
    expect(sent).toEqual(new Set(["INFO", "SET", "GET", "SCRIPT", "EVALSHA", "ZADD", "ZREM", "ZRANGEBYLEX", "ZRANGE", "HMGET", "HGETALL"]));
    const stats = await commandStats();
    // The statistics saw the scripts' own commands too (they are where the work is).
    expect(stats["zrangebylex"]).toBeGreaterThan(100);
    expect(stats["evalsha"]).toBeGreaterThan(100);
    expect(Object.keys(stats).filter((name) => FORBIDDEN.includes(name))).toEqual([]);
    expect(Object.keys(stats).filter((name) => name.startsWith("keys") || name.includes("scan"))).toEqual([]);
  });
});
