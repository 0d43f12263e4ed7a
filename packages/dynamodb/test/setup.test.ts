// setup(): the table created when asked and waited for until ACTIVE, checked otherwise; the table
// definition as code; typed errors for a missing table, another key schema, an unreachable endpoint.
import { readFileSync } from "node:fs";

import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, type DescribeTableCommandOutput } from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, StoreClosedError, StoreNotSetUpError, StoreTimeoutError } from "@resumable/core";
import { dynamoDbTestTableName, getDynamoDb } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBSaver, DynamoDBStore, DynamoDBUnavailableError, tableDefinition, tableTemplate, type DynamoDBClientLike } from "../src/index.js";
import { EMULATORS, clientFor, dropTable, record, threadId } from "./helpers.js";

/** Reports the table as CREATING for the first `n` DescribeTable answers, as AWS does for a while. */
function creatingFor(client: DynamoDBClientLike, n: number): DynamoDBClientLike & { describes: number } {
  const wrapper = {
    describes: 0,
    async send(command: unknown) {
      const out = await client.send(command);
      if (command instanceof DescribeTableCommand && (out as DescribeTableCommandOutput).Table) {
        wrapper.describes += 1;
        if (wrapper.describes <= n) return { ...out, Table: { ...(out as DescribeTableCommandOutput).Table, TableStatus: "CREATING" } };
      }
      return out;
    },
  };
  return wrapper;
}

describe.each(EMULATORS)("setup on %s", (emulator) => {
  let client: DynamoDBClient;
  const tables: string[] = [];
  const table = (label: string) => {
    const name = dynamoDbTestTableName(label);
    tables.push(name);
    return name;
  };
  beforeAll(async () => {
    client = await clientFor(emulator);
  });
  afterAll(async () => {
    await Promise.all(tables.map((t) => dropTable(client, t)));
    client.destroy();
  });

  it("refuses a missing table unless asked to create it, naming the option", async () => {
    const store = new DynamoDBStore(client, { tableName: table("missing") });
    const error = await store.setup().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toMatch(/does not exist.*createTable: true.*tableDefinition/s);
    const onWrite = await store.putCheckpoint({ record: record(threadId(), "cp-1"), blobs: [], chunks: [] }).catch((e: unknown) => e);
    expect(onWrite).toBeInstanceOf(StoreNotSetUpError);
    expect(await store.getCheckpoint({ threadId: threadId(), checkpointNs: "" }).catch((e: unknown) => e)).toBeInstanceOf(StoreNotSetUpError);
  });

  it("creates the table, waits until it is ACTIVE, and is idempotent from many processes at once", async () => {
    const name = table("create");
    const slow = creatingFor(client, 3);
    await new DynamoDBStore(slow, { tableName: name, createTable: true }).setup();
    expect(slow.describes).toBeGreaterThanOrEqual(4);
    const described = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(described.Table?.KeySchema).toEqual(tableDefinition(name).KeySchema);
    const concurrent = table("concurrent");
    await Promise.all(Array.from({ length: 4 }, () => new DynamoDBStore(client, { tableName: concurrent, createTable: { billingMode: "PROVISIONED", readCapacityUnits: 3, writeCapacityUnits: 3 } }).setup()));
    const provisioned = await client.send(new DescribeTableCommand({ TableName: concurrent }));
    expect(provisioned.Table?.ProvisionedThroughput?.WriteCapacityUnits).toBe(3);
    // A saver built with connect() from a client config, set up and usable, closes its own client.
    const server = await getDynamoDb(emulator);
    const saver = await DynamoDBSaver.connect({ tableName: name, clientConfig: { ...server.clientConfig, credentials: { ...server.credentials } } });
    expect(await saver.getTuple({ configurable: { thread_id: threadId() } })).toBeUndefined();
    await saver.close();
    await expect(saver.store.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreClosedError);
  });

  it("gives up waiting for a table that stays CREATING, with a timeout that names it", async () => {
    const name = table("stuck");
    const error = await new DynamoDBStore(creatingFor(client, 1000), { tableName: name, createTable: { timeoutMs: 300 } }).setup().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreTimeoutError);
    expect((error as Error).message).toContain(`table "${name}" was CREATING`);
  });

  it("refuses a table with another key schema", async () => {
    const name = table("schema");
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: "PAY_PER_REQUEST",
        AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
        KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
      }),
    );
    const error = await new DynamoDBStore(client, { tableName: name }).setup().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toMatch(/key schema id:HASH.*partition key "pk" and sort key "sk"/s);
  });
});

describe("configuration and errors", () => {
  it("fails an unreachable endpoint with DynamoDBUnavailableError", async () => {
    const client = new DynamoDBClient({ endpoint: "http://127.0.0.1:9", region: "us-east-1", credentials: { accessKeyId: "a", secretAccessKey: "b" }, maxAttempts: 1 });
    const store = new DynamoDBStore(client, { tableName: "unreachable", endpoint: "http://127.0.0.1:9", retry: { maxAttempts: 1 } });
    const error = await store.getCheckpoint({ threadId: "t", checkpointNs: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DynamoDBUnavailableError);
    expect((error as Error).message).toMatch(/http:\/\/127\.0\.0\.1:9.*getCheckpoint.*retrying it is safe/s);
    client.destroy();
  });

  it("refuses options it cannot honour, naming them", async () => {
    const client = await clientFor("dynalite");
    const bad = (options: object) => () => new DynamoDBStore(client, { tableName: "good_name", ...options });
    expect(bad({ tableName: "a" })).toThrow(InvalidConfigError);
    expect(bad({ tableName: "has space" })).toThrow(/tableName/);
    expect(bad({ maxItemBytes: 500_000 })).toThrow(/maxItemBytes.*409600/);
    expect(bad({ retry: { maxAttempts: 0 } })).toThrow(/retry.maxAttempts/);
    expect(() => new DynamoDBStore({} as DynamoDBClientLike, { tableName: "good_name" })).toThrow(/DynamoDBClient/);
    client.destroy();
  });

  it("the README's CloudFormation and Terraform snippets are the ones tableTemplate() prints", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain(tableTemplate("cloudformation", "checkpoints", { ttlAttribute: "expires_at" }));
    expect(readme).toContain(tableTemplate("terraform", "checkpoints", { ttlAttribute: "expires_at" }));
  });
});
