import { getRedis, getRedisCluster, redisKeyPrefix } from "@resumable/test-servers";
import { Cluster, Redis } from "ioredis";

import type { RedisClient } from "../src/index.js";

/** Clients on the shared test servers, quit by `closeAll()`. */
export class TestClients {
  private readonly clients: Array<Redis | Cluster> = [];

  async standalone(): Promise<Redis> {
    const client = new Redis((await getRedis()).url, { maxRetriesPerRequest: 3 });
    this.clients.push(client);
    return client;
  }

  async cluster(): Promise<Cluster> {
    const client = new Cluster([...(await getRedisCluster()).nodes], { redisOptions: { maxRetriesPerRequest: 3 } });
    this.clients.push(client);
    return client;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.clients.splice(0).map((c) => c.quit().catch(() => undefined)));
  }
}

/** A key prefix no other test file uses. */
export const prefix = (label: string): string => redisKeyPrefix(`redis-${label}`);

/**
 * Wraps a client so that every command it sends is recorded (one call = one round trip): the
 * command name, and for scripts the script's name from its first line of arguments.
 */
export function recordingClient(inner: RedisClient): { client: RedisClient; commands: string[]; reset(): void } {
  const commands: string[] = [];
  const client: RedisClient = {
    callBuffer: (...args) => {
      commands.push(String(args[0]).toUpperCase());
      return inner.callBuffer(...args);
    },
    quit: () => inner.quit(),
  };
  const nodes = (inner as { nodes?: (role: "master") => RedisClient[] }).nodes;
  if (nodes) (client as unknown as { nodes: unknown }).nodes = (role: "master") => nodes.call(inner, role).map((n) => recordingClient(n).client);
  return { client, commands, reset: () => void commands.splice(0) };
}

let counter = 0;
/** A thread id no other test uses. */
export const threadId = (label = "t"): string => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;
