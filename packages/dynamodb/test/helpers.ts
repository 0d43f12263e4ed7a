import { DeleteTableCommand, DynamoDBClient, QueryCommand, type AttributeValue } from "@aws-sdk/client-dynamodb";
import { records } from "@resumable/conformance";
import { MOTO_ENDPOINT_ENV, dynamoDbTestTableName, getDynamoDb, startDynamoDb, type DynamoDbEmulator, type DynamoDbServer } from "@resumable/test-servers";

import { DynamoDBStore, type DynamoDBClientLike, type DynamoDBStoreOptions } from "../src/index.js";

/** Every suite runs on both emulators: each lies differently (see the README). */
export const EMULATORS: readonly DynamoDbEmulator[] = ["dynalite", "moto"];

/** A client on the run's emulator (the vitest global setup starts both once). */
export async function clientFor(emulator: DynamoDbEmulator): Promise<DynamoDBClient> {
  return clientOf(await getDynamoDb(emulator));
}

/** A client on `server`. */
export function clientOf(server: DynamoDbServer): DynamoDBClient {
  return new DynamoDBClient({ ...server.clientConfig, credentials: { ...server.credentials } });
}

/**
 * A moto of the caller's own (stop it after), unless the environment names a moto endpoint: moto
 * serves one request at a time, so a file that sends thousands of requests, or times leases in
 * milliseconds, should not share the run's moto with the others.
 */
export async function ownMoto(): Promise<DynamoDbServer> {
  return process.env[MOTO_ENDPOINT_ENV] ? getDynamoDb("moto") : startDynamoDb("moto");
}

/** A store on a table of its own, created by `setup()`; `drop()` deletes the table. */
export async function freshStore(
  client: DynamoDBClientLike,
  label: string,
  options: Partial<DynamoDBStoreOptions> = {},
  raw: DynamoDBClientLike = client,
): Promise<{ store: DynamoDBStore; tableName: string; drop(): Promise<void> }> {
  const tableName = dynamoDbTestTableName(label);
  const store = new DynamoDBStore(client, { tableName, createTable: true, ...options });
  await store.setup();
  return { store, tableName, drop: () => dropTable(raw, tableName) };
}

export async function dropTable(client: DynamoDBClientLike, tableName: string): Promise<void> {
  await client.send(new DeleteTableCommand({ TableName: tableName })).catch(() => {});
}

/** Every item of a thread's partition, as stored. */
export async function rawItems(client: DynamoDBClientLike, tableName: string, threadId: string): Promise<Array<Record<string, AttributeValue>>> {
  const items: Array<Record<string, AttributeValue>> = [];
  let start: Record<string, AttributeValue> | undefined;
  do {
    const out = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: "pk = :pk",
        ExpressionAttributeValues: { ":pk": { S: threadId } },
        ConsistentRead: true,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    items.push(...(out.Items ?? []));
    start = out.LastEvaluatedKey;
  } while (start);
  return items;
}

let counter = 0;
/** A thread id no other test uses. */
export const threadId = (label = "t"): string => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

// Record builders shared with every backend's store-level tests.
export const { text, json, empty, record, blob, write, cid, decode, collect } = records;

/** A chunk record with text data. */
export const chunkOf = (hash: string, index: number, data: string) => ({ hash, index, data: new TextEncoder().encode(data) });
