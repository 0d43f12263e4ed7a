/**
 * Database servers for this repository's tests. Each kind is found, in order, from a URL in the
 * environment, a local binary started on a free loopback port, or a testcontainers container. Under
 * `CI=true` a kind that cannot be found throws: CI never skips a database.
 *
 * @module
 */
export {
  CACHE_DIR_ENV,
  TestServerUnavailableError,
  cacheDir,
  dockerAvailable,
  freePort,
  inCi,
  type ServerSource,
} from "./common.js";
export {
  POSTGRES_BIN_ENV,
  POSTGRES_PROVIDE_KEY,
  POSTGRES_URL_ENV,
  createTestDatabase,
  createTestSchema,
  findPostgres,
  findPostgresBinDir,
  getPostgres,
  startDisposablePostgres,
  type DisposablePostgresServer,
  type PostgresServer,
  type TestDatabase,
  type TestSchema,
} from "./postgres.js";
export {
  REDIS_BIN_ENV,
  REDIS_CLUSTER_NODES_ENV,
  REDIS_CLUSTER_PROVIDE_KEY,
  REDIS_PROVIDE_KEY,
  REDIS_URL_ENV,
  findRedis,
  findRedisBinaries,
  findRedisCluster,
  formatRedisClusterNodes,
  getRedis,
  getRedisCluster,
  redisCommand,
  redisKeyPrefix,
  startDisposableRedis,
  startRedisCluster,
  type DisposableRedisServer,
  type RedisCluster,
  type RedisClusterNode,
  type RedisServer,
} from "./redis.js";
