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
  startRedis,
  startRedisCluster,
  type DisposableRedisServer,
  type RedisCluster,
  type RedisClusterNode,
  type RedisServer,
} from "./redis.js";
export {
  DYNALITE_ENDPOINT_ENV,
  DYNAMODB_ENDPOINT_ENV,
  DYNAMODB_PROVIDE_KEYS,
  DYNAMODB_TEST_CREDENTIALS,
  DYNAMODB_TEST_REGION,
  MOTO_ENDPOINT_ENV,
  MOTO_VENV_ENV,
  MOTO_VERSION,
  dynamoDbTestTableName,
  findDynamoDb,
  findMotoServer,
  getDynamoDb,
  startDynamoDb,
  type DynamoDbEmulator,
  type DynamoDbServer,
} from "./dynamodb.js";
export {
  FERRETDB_BIN_ENV,
  FERRETDB_VERSION,
  MONGODB_IMAGE,
  MONGODB_PROVIDE_KEYS,
  MONGODB_URL_ENV,
  createMongoTestDatabase,
  findFerretDb,
  findMongoDb,
  getMongoDb,
  startMongoDb,
  type FerretDbHandler,
  type MongoDbEngine,
  type MongoDbServer,
  type MongoTestDatabase,
} from "./mongodb.js";
