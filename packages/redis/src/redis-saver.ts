/**
 * `RedisSaver`: a LangGraph.js checkpointer on plain Redis, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";

import { RedisStore, type RedisClient, type RedisConnectOptions, type RedisStoreOptions } from "./redis-store.js";

/** Options of {@link RedisSaver}: the store's (`keyPrefix`, `ttlSeconds`...) and the saver's (`serde`...). */
export interface RedisSaverOptions extends RedisStoreOptions, ResumableSaverOptions {}

/** Options of {@link RedisSaver.connect}. */
export interface RedisSaverConnectOptions extends RedisConnectOptions, ResumableSaverOptions {
  /** Run `setup()` before returning (default `true`). */
  setup?: boolean;
}

/**
 * A LangGraph.js checkpointer (a `BaseCheckpointSaver`) that keeps checkpoints in Redis 7 or Valkey,
 * standalone or Cluster, with no modules (no RedisJSON, no RediSearch).
 *
 * @example
 * ```ts
 * import { RedisSaver } from "@resumable/redis";
 * const checkpointer = await RedisSaver.connect("redis://127.0.0.1:6379", { keyPrefix: "agents:" });
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * await checkpointer.close();
 * ```
 */
export class RedisSaver extends ResumableSaver {
  declare readonly store: RedisStore;

  /**
   * @param client An ioredis `Redis` or `Cluster` (left open by {@link close}), or a {@link RedisStore}.
   *   Call {@link setup} once before use, or build the saver with {@link RedisSaver.connect}.
   */
  constructor(client: RedisClient | RedisStore, options: RedisSaverOptions = {}) {
    super(client instanceof RedisStore ? client : new RedisStore(client, options), options);
  }

  /**
   * Opens a client of its own for a URL (`redis://`, `rediss://`), or a `Cluster` for several URLs,
   * runs {@link setup} (unless `setup: false`) and returns a saver ready to use. {@link close} quits
   * the client.
   */
  static async connect(url: string | readonly string[], options: RedisSaverConnectOptions = {}): Promise<RedisSaver> {
    const saver = new RedisSaver(RedisStore.connect(url, options), options);
    return options.setup === false ? saver : saver.ready();
  }

  /** The same as {@link connect}, under the name LangChain's `RedisSaver` uses. */
  static async fromUrl(url: string, options: RedisSaverConnectOptions = {}): Promise<RedisSaver> {
    return RedisSaver.connect(url, options);
  }
}
