/**
 * `@resumable/dynamodb`: a durable LangGraph.js checkpointer on DynamoDB (`@aws-sdk/client-dynamodb`),
 * built on `@resumable/core`: one table, items within 400 KB, atomic without transactions.
 *
 * @packageDocumentation
 */
export { DynamoDBSaver, type DynamoDBSaverConnectOptions, type DynamoDBSaverOptions } from "./dynamodb-saver.js";
export { DynamoDBStore, type DynamoDBConnectOptions, type DynamoDBStoreOptions } from "./dynamodb-store.js";
export { DynamoDBThrottledError, DynamoDBTransactionError, DynamoDBUnavailableError } from "./errors.js";
export { DEFAULT_MAX_ITEM_BYTES, DYNAMODB_ITEM_LIMIT, itemSize, type Item } from "./item-size.js";
export { INLINE_NS_BYTES } from "./keys.js";
export { STATUS_INDEX } from "./many-workers.js";
export { ATTRIBUTE_DEFINITIONS, KEY_SCHEMA, STATUS_INDEX_ATTRIBUTE_DEFINITIONS, statusIndexDefinition, tableDefinition, tableTemplate, type CreateTableOptions } from "./table.js";
export type { DynamoDBClientLike, DynamoDBRetryOptions } from "./table-client.js";
export type { DynamoDBTtlOptions } from "./thread-ttl.js";
