import { CreateTableCommand, DynamoDBClient, GetItemCommand, PutItemCommand, QueryCommand } from "@aws-sdk/client-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { dynamoDbTestTableName, getDynamoDb, type DynamoDbEmulator } from "../src/index.js";

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
