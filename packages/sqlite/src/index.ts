/**
 * `@resumable/sqlite`: a durable LangGraph.js checkpointer on SQLite (better-sqlite3), built on
 * `@resumable/core`.
 *
 * @packageDocumentation
 */
export { SqliteSaver, type SqliteSaverOptions } from "./sqlite-saver.js";
export { SqliteStore, type SqliteStoreOptions, type SqliteSynchronous } from "./sqlite-store.js";
export { SqliteDriverError, type SqliteDatabase, type SqliteStatement } from "./database.js";
export { SCHEMA_VERSION } from "./schema.js";
