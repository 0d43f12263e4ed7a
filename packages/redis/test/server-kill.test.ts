import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { RunnableConfig } from "@langchain/core/runnables";
import { startDisposableRedis, type DisposableRedisServer } from "@resumable/test-servers";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { RedisSaver, RedisUnavailableError } from "../src/index.js";

// This file owns its server, with `appendonly yes` and `appendfsync always`: killing the shared one
// would break the other test files.
let server: DisposableRedisServer;
beforeAll(async () => {
  server = await startDisposableRedis();
});
afterAll(() => server?.stop());

const NODES = ["lookup", "check", "charge", "email", "archive"];

function buildGraph(checkpointer: RedisSaver, onNode: (name: string) => Promise<void>) {
  const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  let builder = new StateGraph(State) as unknown as StateGraph<typeof State.spec, any, any, string>;
  for (const name of NODES) {
    builder = builder.addNode(name, async () => {
      await onNode(name);
      return { log: [name] };
    }) as typeof builder;
  }
  builder.addEdge(START, NODES[0]!);
  NODES.slice(1).forEach((name, i) => builder.addEdge(NODES[i]!, name));
  builder.addEdge(NODES.at(-1)!, END);
  return builder.compile({ checkpointer });
}

describe("redis-server is SIGKILLed in the middle of a run (appendonly yes, appendfsync always)", () => {
  it("keeps every acknowledged checkpoint and write across the restart from its AOF, and the run resumes", async () => {
    expect(server.appendOnly).toBe(true);
    const saver = await RedisSaver.connect(server.url, { keyPrefix: "aof:" });
    // What the saver acknowledged: puts and putWrites that resolved before the kill.
    const acknowledged: { checkpoints: string[]; writes: Array<{ checkpointId: string; taskId: string; channels: string[] }> } = { checkpoints: [], writes: [] };
    const put = saver.put.bind(saver);
    const putWrites = saver.putWrites.bind(saver);
    saver.put = async (...args) => {
      const config = await put(...args);
      acknowledged.checkpoints.push(String(config.configurable?.checkpoint_id));
      return config;
    };
    saver.putWrites = async (config: RunnableConfig, writes, taskId, taskPath) => {
      await putWrites(config, writes, taskId, taskPath);
      acknowledged.writes.push({ checkpointId: String(config.configurable?.checkpoint_id), taskId, channels: writes.map(([channel]) => channel) });
    };
    const config = { configurable: { thread_id: "killed-run" }, durability: "sync" as const };
    const ran: string[] = [];
    let killed = false;
    const graph = buildGraph(saver, async (name) => {
      ran.push(name);
      if (name === "charge" && !killed) {
        killed = true;
        await server.kill();
      }
    });

    const error = await graph.invoke({ log: ["start"] }, config).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    expect((error as Error).message).toMatch(/Redis was unreachable during (putWrites|putCheckpoint)/);
    // While the server is down every call fails the same clear way.
    await expect(saver.getTuple(config)).rejects.toBeInstanceOf(RedisUnavailableError);
    expect(acknowledged.checkpoints.length).toBeGreaterThanOrEqual(3);
    expect(acknowledged.writes.length).toBeGreaterThanOrEqual(2);

    await server.restart();
    // A new client, as a new process would have, reads what the AOF kept (the old one reconnects too).
    const fresh = await RedisSaver.connect(server.url, { keyPrefix: "aof:" });
    const stored = new Map<string, { writes: Array<[string, string, unknown]>; values: Record<string, unknown> }>();
    for await (const tuple of fresh.list({ configurable: { thread_id: "killed-run" } })) {
      stored.set(String(tuple.config.configurable?.checkpoint_id), { writes: tuple.pendingWrites as Array<[string, string, unknown]>, values: tuple.checkpoint.channel_values });
    }
    for (const id of acknowledged.checkpoints) expect(stored.has(id), `acknowledged checkpoint ${id}`).toBe(true);
    for (const batch of acknowledged.writes) {
      const found = stored.get(batch.checkpointId)?.writes.filter(([task]) => task === batch.taskId).map(([, channel]) => channel);
      expect(found, `acknowledged writes of task ${batch.taskId} on ${batch.checkpointId}`).toEqual(batch.channels);
    }
    // No checkpoint lost a blob: every blob its put stored is there (a channel without a value has none).
    for (const id of stored.keys()) {
      const raw = await fresh.store.getCheckpoint({ threadId: "killed-run", checkpointNs: "", checkpointId: id });
      const versions = (await fresh.requiredBlobs(raw!)).map(({ channel, version }) => `${channel}@${version}`).sort();
      expect(versions.length, `blobs required by checkpoint ${id}`).toBeGreaterThan(0);
      // A delta channel comes back with its whole range, so the blobs may be more than the versions.
      const blobs = new Set(raw!.blobs.map((b) => `${b.channel}@${b.version}`));
      expect(versions.filter((v) => !blobs.has(v)), `blobs missing for checkpoint ${id}`).toEqual([]);
    }
    // The saver that saw the kill works again without being rebuilt.
    expect(await saver.getTuple(config)).toBeDefined();

    const resumed = await buildGraph(fresh, async (name) => void ran.push(name)).invoke(null, config);
    expect(resumed.log).toEqual(["start", ...NODES]);
    // Nodes that finished before the crash were not run again; only the interrupted one may repeat.
    expect(ran.filter((n) => n === "lookup" || n === "check")).toEqual(["lookup", "check"]);
    await saver.close();
    await fresh.close();
    // The server really ran with an fsynced AOF.
    const check = new Redis(server.url);
    expect(await check.config("GET", "appendfsync")).toEqual(["appendfsync", "always"]);
    await check.quit();
  });
});
