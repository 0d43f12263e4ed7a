/**
 * `@resumable/redis`: a durable LangGraph.js checkpointer on plain Redis 7 or Valkey (no modules),
 * standalone or Cluster, through `ioredis`, built on `@resumable/core`.
 *
 * @packageDocumentation
 */
export { RedisSaver, type RedisSaverConnectOptions, type RedisSaverOptions } from "./redis-saver.js";
export { LAYOUT_VERSION, RedisStore, type RedisClient, type RedisConnectOptions, type RedisStoreOptions } from "./redis-store.js";
export { RedisUnavailableError } from "./errors.js";
