import { runConformance } from "@resumable/conformance";
import { afterAll, describe, expect, it } from "vitest";

import { RedisStore, type RedisClient } from "../src/index.js";
import { TestClients, prefix } from "./helpers.js";

// The conformance suite through ioredis.Cluster on a three-node Redis Cluster (no replicas). Every
// command a store sends is watched: none may fail with CROSSSLOT (a script or command touching keys
// of two slots), which is what a key layout without one hash tag per thread would cause.
const clients = new TestClients();
const crossSlot: string[] = [];
afterAll(() => clients.closeAll());

function watching(inner: RedisClient): RedisClient {
  const watch = (promise: Promise<unknown>, command: string) =>
    promise.catch((error: unknown) => {
      if (/CROSSSLOT/.test(String((error as Error)?.message))) crossSlot.push(`${command}: ${(error as Error).message}`);
      throw error;
    });
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === "callBuffer") return (...args: [string, ...Array<string | Buffer | number>]) => watch(target.callBuffer(...args), String(args[0]));
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

runConformance(
  {
    name: "redis-cluster",
    async create() {
      const store = new RedisStore(watching(await clients.cluster()), { keyPrefix: prefix("cluster") });
      await store.setup();
      return store;
    },
  },
  { name: "redis-cluster", crash: false },
);

describe("the cluster run", () => {
  it("spread threads over the three nodes and issued no CROSSSLOT command", async () => {
    const cluster = await clients.cluster();
    const store = new RedisStore(cluster, { keyPrefix: prefix("cluster-spread") });
    // Threads land on different masters (their hash tags differ), and each still works whole.
    const slots = new Set<number>();
    for (let i = 0; i < 12; i++) {
      const threadId = `spread-${i}`;
      await store.putCheckpoint({
        record: {
          threadId,
          checkpointNs: "",
          checkpointId: "cp-1",
          parentCheckpointId: undefined,
          checkpoint: { type: "json", data: new TextEncoder().encode("{}") },
          metadata: { type: "json", data: new TextEncoder().encode("{}") },
          metadataJson: {},
          channelVersions: {},
        },
        blobs: [],
        chunks: [],
      });
      slots.add(Number(await cluster.call("CLUSTER", "KEYSLOT", `${store.keyPrefix}{${threadId}}:m`)));
      expect((await store.getCheckpoint({ threadId, checkpointNs: "" }))?.record.checkpointId).toBe("cp-1");
    }
    expect(slots.size).toBeGreaterThan(1);
    expect(crossSlot).toEqual([]);
  });
});
