import { BatchWriteItemCommand, CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand, TransactWriteItemsCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { dynamoDbTestTableName, getDynamoDb, startDynamoDb, type DynamoDbEmulator } from "../src/index.js";

describe.each<DynamoDbEmulator>(["dynalite", "moto"])("DynamoDB test server (%s)", (emulator) => {
  const clients: DynamoDBClient[] = [];
  afterAll(() => {
    for (const client of clients) client.destroy();
  });

  it("finds the emulator once per process", async () => {
    const a = await getDynamoDb(emulator);
    const b = await getDynamoDb(emulator);
    expect(b.endpoint).toBe(a.endpoint);
    expect(a.emulator).toBe(emulator);
    // The global setup (vitest.config.ts) started it, unless the environment names one.
    expect(["provided", "env"]).toContain(a.source);
    expect(a.clientConfig).toEqual({ endpoint: a.endpoint, region: a.region, credentials: a.credentials });
  });

  it("serves CreateTable, PutItem, GetItem and Query through @aws-sdk/client-dynamodb", async () => {
    const server = await getDynamoDb(emulator);
    const client = new DynamoDBClient(server.clientConfig);
    clients.push(client);
    const TableName = dynamoDbTestTableName("sdk");
    expect(TableName).not.toBe(dynamoDbTestTableName("sdk"));
    const created = await client.send(
      new CreateTableCommand({
        TableName,
        AttributeDefinitions: [
          { AttributeName: "pk", AttributeType: "S" },
          { AttributeName: "sk", AttributeType: "N" },
        ],
        KeySchema: [
          { AttributeName: "pk", KeyType: "HASH" },
          { AttributeName: "sk", KeyType: "RANGE" },
        ],
        BillingMode: "PAY_PER_REQUEST",
      }),
    );
    // Both emulators make the table usable at once (dynalite: createTableMs 0).
    expect(["ACTIVE", "CREATING"]).toContain(created.TableDescription?.TableStatus);
    for (let sk = 1; sk <= 3; sk++) {
      await client.send(new PutItemCommand({ TableName, Item: { pk: { S: "thread-1" }, sk: { N: String(sk) }, body: { S: `step ${sk}` } } }));
    }
    await client.send(new PutItemCommand({ TableName, Item: { pk: { S: "thread-2" }, sk: { N: "1" }, body: { S: "other" } } }));
    const got = await client.send(new GetItemCommand({ TableName, Key: { pk: { S: "thread-1" }, sk: { N: "2" } }, ConsistentRead: true }));
    expect(got.Item?.body).toEqual({ S: "step 2" });
    const newestFirst = await client.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: "pk = :pk AND sk >= :from",
        ExpressionAttributeValues: { ":pk": { S: "thread-1" }, ":from": { N: "2" } },
        ScanIndexForward: false,
      }),
    );
    expect(newestFirst.Items?.map((item) => item.sk?.N)).toEqual(["3", "2"]);
  });
});

describe("moto started here", () => {
  it("applies a transaction atomically among concurrent requests: a cancelled one never undoes another's write", async () => {
    // moto's own server runs requests in parallel threads, and a cancelled TransactWriteItems restores
    // a copy of the table taken when it started, undoing what other requests wrote meanwhile.
    const server = await startDynamoDb("moto");
    const client = new DynamoDBClient({ ...server.clientConfig, credentials: { ...server.credentials } });
    try {
      const TableName = dynamoDbTestTableName("atomic");
      await client.send(
        new CreateTableCommand({
          TableName,
          AttributeDefinitions: [{ AttributeName: "pk", AttributeType: "S" }],
          KeySchema: [{ AttributeName: "pk", KeyType: "HASH" }],
          BillingMode: "PAY_PER_REQUEST",
        }),
      );
      // A table big enough that copying it takes moto a while.
      for (let batch = 0; batch < 40; batch += 1) {
        const RequestItems = { [TableName]: Array.from({ length: 25 }, (_, i) => ({ PutRequest: { Item: { pk: { S: `filler-${batch}-${i}` }, body: { S: "x".repeat(2000) } } } })) };
        await client.send(new BatchWriteItemCommand({ RequestItems }));
      }
      const cancelled = () =>
        client
          .send(new TransactWriteItemsCommand({ TransactItems: [{ ConditionCheck: { TableName, Key: { pk: { S: "filler-0-0" } }, ConditionExpression: "attribute_not_exists(pk)" } }, { Put: { TableName, Item: { pk: { S: "never" } } } }] }))
          .then(
            () => "applied",
            (error: Error) => error.name,
          );
      const writes = Array.from({ length: 60 }, (_, i) => `written-${i}`);
      // Each write is sent while a cancelled transaction is under way.
      const outcomes = await Promise.all(
        writes.flatMap((pk, i) => [
          cancelled(),
          new Promise((resolve) => setTimeout(resolve, 5 + i)).then(() => client.send(new PutItemCommand({ TableName, Item: { pk: { S: pk } } })).then(() => "put")),
        ]),
      );
      expect(outcomes.filter((o) => o !== "put" && o !== "TransactionCanceledException"), "transactions that were not cancelled").toEqual([]);
      const lost: string[] = [];
      for (const pk of writes) {
        const got = await client.send(new GetItemCommand({ TableName, Key: { pk: { S: pk } }, ConsistentRead: true }));
        if (!got.Item) lost.push(pk);
      }
      expect(lost, "writes a cancelled transaction undid").toEqual([]);
    } finally {
      client.destroy();
      await server.stop();
    }
  }, 120_000);
});
