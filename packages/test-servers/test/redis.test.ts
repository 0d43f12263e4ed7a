import { Redis, Cluster } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { getRedis, getRedisCluster, redisKeyPrefix, startDisposableRedis } from "../src/index.js";

describe("Redis test server", () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("finds a standalone server once per process and answers PING, SET and GET through ioredis", async () => {
    const a = await getRedis();
    const b = await getRedis();
    expect(b.url).toBe(a.url);
    // The global setup (vitest.config.ts) started it, unless the environment names one.
    expect(["provided", "env"]).toContain(a.source);
    const prefix = redisKeyPrefix("standalone");
    expect(prefix).not.toBe(redisKeyPrefix("standalone"));
    const client = new Redis(a.url, { keyPrefix: prefix, lazyConnect: true });
    cleanups.push(() => client.quit());
    await client.connect();
    expect(await client.ping()).toBe("PONG");
    expect(await client.set("greeting", "hello")).toBe("OK");
    expect(await client.get("greeting")).toBe("hello");
    // The prefix is applied server-side too: the key is stored under it.
    const raw = new Redis(a.url, { lazyConnect: true });
    cleanups.push(() => raw.quit());
    await raw.connect();
    expect(await raw.get(`${prefix}greeting`)).toBe("hello");
  });

  it("runs a three-node cluster: keys in different slots, and MULTI on keys sharing a hash tag", async () => {
    const cluster = await getRedisCluster();
    expect(["provided", "env"]).toContain(cluster.source);
    expect(cluster.nodes.length).toBeGreaterThanOrEqual(1);
    const client = new Cluster(cluster.nodes.map(({ host, port }) => ({ host, port })), { lazyConnect: true });
    cleanups.push(() => client.quit());
    await client.connect();
    const prefix = redisKeyPrefix("cluster");
    // Two keys in slots that different nodes serve, so that the client must follow the slot map.
    const ranges = await client.cluster("SLOTS");
    const ownerOf = async (key: string) => {
      const slot = Number(await client.cluster("KEYSLOT", key));
      return ranges.find(([from, to]) => slot >= from && slot <= to)![2]![1];
    };
    const first = `${prefix}a`;
    let second = `${prefix}b0`;
    for (let i = 1; (await ownerOf(second)) === (await ownerOf(first)); i++) second = `${prefix}b${i}`;
    await client.set(first, "1");
    await client.set(second, "2");
    expect(await client.get(first)).toBe("1");
    expect(await client.get(second)).toBe("2");

    const tagged = [`${prefix}{thread-1}:head`, `${prefix}{thread-1}:log`];
    const result = await client.multi().set(tagged[0]!, "h").rpush(tagged[1]!, "x", "y").exec();
    expect(result).toEqual([
      [null, "OK"],
      [null, 2],
    ]);
    expect(await client.lrange(tagged[1]!, 0, -1)).toEqual(["x", "y"]);
    // Keys in different slots cannot share a MULTI: the cluster refuses it.
    await expect(client.multi().set(first, "x").set(second, "y").exec()).rejects.toThrow();
  });

  it("keeps every acknowledged SET of a disposable AOF server across SIGKILL and restart", async () => {
    const server = await startDisposableRedis();
    cleanups.push(() => server.stop());
    const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    await client.connect();
    const acknowledged: string[] = [];
    for (let i = 0; i < 200; i++) {
      await client.set(`k${i}`, `v${i}`);
      acknowledged.push(`k${i}`);
    }
    await server.kill();
    await expect(client.ping()).rejects.toThrow();
    client.disconnect();
    await server.restart();
    const after = new Redis(server.url, { lazyConnect: true });
    cleanups.push(() => after.quit());
    await after.connect();
    const values = await after.mget(...acknowledged);
    expect(values).toEqual(acknowledged.map((key) => key.replace("k", "v")));
    expect(new URL(server.url).port).toBe(String(server.port));
  });
});
