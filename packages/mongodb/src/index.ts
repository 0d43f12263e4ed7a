/**
 * `@resumable/mongodb`: a durable LangGraph.js checkpointer on MongoDB (the `mongodb` driver), atomic
 * without multi-document transactions, built on `@resumable/core`.
 *
 * @packageDocumentation
 */
export { MongoDBSaver, type MongoDBSaverConnectOptions, type MongoDBSaverParams } from "./mongodb-saver.js";
export { LAYOUT_VERSION, MongoDBStore, type MongoDBCollections, type MongoDBConnectOptions, type MongoDBStoreOptions } from "./mongodb-store.js";
export { MongoThreadExpiringError, MongoUnavailableError } from "./errors.js";
