/**
 * `@resumable/postgres`: a durable LangGraph.js checkpointer on PostgreSQL (`pg`), built on
 * `@resumable/core`.
 *
 * @packageDocumentation
 */
export { PostgresSaver, type PostgresSaverConnectOptions, type PostgresSaverOptions } from "./postgres-saver.js";
export { PostgresStore, type PostgresConnectOptions, type PostgresStoreOptions } from "./postgres-store.js";
export { PostgresUnavailableError } from "./errors.js";
export { LATEST_VERSION as SCHEMA_VERSION, TABLES } from "./migrations.js";
export type { PostgresPool, PostgresPoolClient, PostgresPoolOptions, PostgresQueryable, PostgresQueryResult } from "./pool.js";
