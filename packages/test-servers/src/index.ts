/**
 * Database servers for this repository's tests. Each kind is found, in order, from a URL in the
 * environment, a local binary started on a free loopback port, or a testcontainers container. Under
 * `CI=true` a kind that cannot be found throws: CI never skips a database.
 *
 * @module
 */
export { TestServerUnavailableError, dockerAvailable, freePort, inCi } from "./common.js";
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
