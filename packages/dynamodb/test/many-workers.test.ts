// The manyWorkers option beyond the conformance categories (conformance-moto-many-workers.test.ts):
// setup() refuses an endpoint without TransactWriteItems (dynalite), creates or adds the status index,
// and checks it; off, nothing of it exists; the items it adds, and what a refused fenced write leaves.
import { readFileSync } from "node:fs";

import { CreateTableCommand, DescribeTableCommand, TransactionCanceledException, TransactWriteItemsCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, LeaseLostError, StoreNotSetUpError } from "@resumable/core";
import { dynamoDbTestTableName } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBStore, DynamoDBTransactionError, STATUS_INDEX, tableDefinition, tableTemplate, type DynamoDBClientLike } from "../src/index.js";
import { blob, clientFor, dropTable, freshStore, json, rawItems, record, threadId } from "./helpers.js";

/**
 * In front of a real client: counts requests by command, and cancels the next transactions with the
 * given reasons (as DynamoDB does under contention or for an invalid action) without sending them.
 */
class CancellingClient implements DynamoDBClientLike {
  readonly calls = new Map<string, number>();
  cancel: string[][] = [];
  constructor(readonly inner: DynamoDBClientLike) {}
  async send(command: any): Promise<any> {
    const name = String(command.constructor.name).replace(/Command$/, "");
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
    const reasons = command instanceof TransactWriteItemsCommand ? this.cancel.shift() : undefined;
    if (reasons) {
      throw new TransactionCanceledException({ message: `Transaction cancelled [${reasons.join(", ")}]`, $metadata: {}, CancellationReasons: reasons.map((Code) => ({ Code })) });
    }
    return this.inner.send(command);
  }
}

/**
 * In front of a real client: the next `lose` requests of the given command reach the table, then
 * their responses are lost (an InternalServerError comes back, as from a server or network that
 * fails after applying the request), so the store retries a request that already landed.
 */
class LostResponseClient implements DynamoDBClientLike {
  lose = 0;
  lost = 0;
  constructor(
    readonly inner: DynamoDBClientLike,
    readonly command: string,
  ) {}
  async send(command: any): Promise<any> {
    const out = await this.inner.send(command);
    if (this.lose > 0 && String(command.constructor.name).replace(/Command$/, "") === this.command) {
      this.lose -= 1;
      this.lost += 1;
      throw Object.assign(new Error("We encountered an internal error. Please try again. (simulated: the request was applied)"), { name: "InternalServerError", $metadata: { httpStatusCode: 500 } });
    }
    return out;
  }
}

describe("manyWorkers on dynalite (no TransactWriteItems)", () => {
  let client: DynamoDBClient;
  const tables: string[] = [];
  beforeAll(async () => {
    client = await clientFor("dynalite");
  });
  afterAll(async () => {
    await Promise.all(tables.map((t) => dropTable(client, t)));
    client.destroy();
  });

  it("setup() fails with an InvalidConfigError that names TransactWriteItems and suggests moto or AWS", async () => {
    const tableName = dynamoDbTestTableName("mw_dynalite");
    tables.push(tableName);
    const store = new DynamoDBStore(client, { tableName, createTable: true, manyWorkers: true });
    const error = await store.setup().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidConfigError);
    expect((error as InvalidConfigError).field).toBe("manyWorkers");
    expect((error as Error).message).toMatch(/TransactWriteItems.*dynalite.*DynamoDB itself or moto/s);
    // The same table without the option is fine.
    await new DynamoDBStore(client, { tableName }).setup();
  });
});

describe("manyWorkers on moto", () => {
  let client: DynamoDBClient;
  const tables: string[] = [];
  const table = (label: string) => {
    const name = dynamoDbTestTableName(label);
    tables.push(name);
    return name;
  };
  beforeAll(async () => {
    client = await clientFor("moto");
  });
  afterAll(async () => {
    await Promise.all(tables.map((t) => dropTable(client, t)));
    client.destroy();
  });

  it("off by default: no lease or status capability, no index", async () => {
    const { store, tableName, drop } = await freshStore(client, "mw_off");
    try {
      expect(store.capabilities.leases).toBeUndefined();
      expect(store.capabilities.threadStatus).toBeUndefined();
      const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
      expect(described.Table?.GlobalSecondaryIndexes ?? []).toEqual([]);
      await expect(store.claimLease({ threadId: threadId(), workerId: "w", ttlMs: 1000 })).rejects.toThrow(/needs the manyWorkers option/);
    } finally {
      await drop();
    }
  });

  it("creates the table with the status index; on an existing table adds it with createTable and refuses without", async () => {
    const { store, tableName, drop } = await freshStore(client, "mw_new", { manyWorkers: true });
    try {
      expect(store.capabilities).toMatchObject({ leases: true, threadStatus: true });
      const described = await client.send(new DescribeTableCommand({ TableName: tableName }));
      expect(described.Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName)).toEqual([STATUS_INDEX]);
    } finally {
      await drop();
    }
    const existing = table("mw_existing");
    await client.send(new CreateTableCommand(tableDefinition(existing)));
    const refused = await new DynamoDBStore(client, { tableName: existing, manyWorkers: true }).setup().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StoreNotSetUpError);
    expect((refused as Error).message).toMatch(/no global secondary index "threads-by-status".*createTable/s);
    await new DynamoDBStore(client, { tableName: existing, manyWorkers: true, createTable: true }).setup();
    const after = await client.send(new DescribeTableCommand({ TableName: existing }));
    expect(after.Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName)).toEqual([STATUS_INDEX]);
    // Idempotent, and the plain store still accepts the table.
    await new DynamoDBStore(client, { tableName: existing, manyWorkers: true }).setup();
    await new DynamoDBStore(client, { tableName: existing }).setup();
  });

  it("a refused fenced put throws LeaseLostError with the new holder, and leaves only invisible parts; deleteThread keeps the lease item", async () => {
    const { store, tableName, drop } = await freshStore(client, "mw_items", { manyWorkers: true });
    try {
      const thread = threadId("fenced");
      const a = await store.claimLease({ threadId: thread, workerId: "worker-a", ttlMs: 60_000 });
      expect(a?.token).toBe(1);
      const first = record(thread, "cp-1", { channelVersions: { n: "1" } });
      await store.putCheckpoint({ record: first, blobs: [blob("n", "1", json("one"))], chunks: [], fence: { token: 1, workerId: "worker-a" }, status: { state: "done", updatedAt: 1000 } });
      expect(await store.getThreadStatus(thread)).toMatchObject({ state: "done", checkpointId: "cp-1", updatedAt: 1000, attempts: 0 });
      await store.releaseLease(a!);
      const b = await store.claimLease({ threadId: thread, workerId: "worker-b", ttlMs: 60_000 });
      expect(b?.token).toBe(2);
      const stale = record(thread, "cp-2", { parentCheckpointId: "cp-1", channelVersions: { n: "2" } });
      const error = await store
        .putCheckpoint({ record: stale, blobs: [blob("n", "2", json("two"))], chunks: [], fence: { token: 1, workerId: "worker-a" }, status: { state: "pending", updatedAt: 2000 } })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(error).toMatchObject({ token: 1, currentToken: 2, holder: "worker-b" });
      expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe("cp-1");
      expect(await store.getThreadStatus(thread)).toMatchObject({ state: "done", checkpointId: "cp-1" });
      const keys = (await rawItems(client, tableName, thread)).map((i) => i["sk"]!.S!).sort();
      // The stale put's blob is there, unreferenced by any checkpoint: invisible, as after a crash.
      expect(keys.filter((k) => k.startsWith("b|"))).toHaveLength(2);
      expect(keys).toEqual(expect.arrayContaining(["l|", "s|"]));
      await store.deleteThread(thread);
      expect((await rawItems(client, tableName, thread)).map((i) => i["sk"]!.S!)).toEqual(["l|"]);
      expect(await store.getThreadStatus(thread)).toBeUndefined();
      expect((await store.getLease(thread))?.token).toBe(2);
    } finally {
      await drop();
    }
  });

  it("requests per call as the README says; conflicts are retried, other cancellations are DynamoDBTransactionError", async () => {
    const wrapper = new CancellingClient(client);
    const { store, drop } = await freshStore(wrapper, "mw_requests", { manyWorkers: true, retry: { baseDelayMs: 1, maxDelayMs: 5 } }, client);
    try {
      const thread = threadId("requests");
      wrapper.calls.clear();
      const lease = await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
      expect(Object.fromEntries(wrapper.calls)).toEqual({ UpdateItem: 1 });
      const fence = { token: lease!.token, workerId: "w" };
      wrapper.calls.clear();
      await store.putCheckpoint({ record: record(thread, "cp-1", { channelVersions: { n: "1" } }), blobs: [blob("n", "1")], chunks: [], fence, status: { state: "pending", updatedAt: 1 } });
      expect(Object.fromEntries(wrapper.calls)).toEqual({ BatchWriteItem: 1, TransactWriteItems: 1 });
      // Two conflicts, then through: the checkpoint is there once.
      wrapper.calls.clear();
      wrapper.cancel = [["None", "TransactionConflict", "None"], ["TransactionConflict", "None", "None"]];
      await store.putCheckpoint({ record: record(thread, "cp-2", { parentCheckpointId: "cp-1" }), blobs: [], chunks: [], fence, status: { state: "done", updatedAt: 2 } });
      expect(wrapper.calls.get("TransactWriteItems")).toBe(3);
      expect(await store.getThreadStatus(thread)).toMatchObject({ state: "done", checkpointId: "cp-2" });
      // Any other reason: a typed error with the reasons, and nothing of the call visible.
      wrapper.cancel = [["None", "ValidationError", "None"]];
      const error = await store
        .putCheckpoint({ record: record(thread, "cp-3", { parentCheckpointId: "cp-2" }), blobs: [], chunks: [], fence, status: { state: "done", updatedAt: 3 } })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DynamoDBTransactionError);
      expect(error).toMatchObject({ operation: "putCheckpoint", reasons: ["None", "ValidationError", "None"] });
      expect((await store.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe("cp-2");
      // Without a lease and without a status (a subgraph namespace), a put is the plain PutItem it always was.
      wrapper.calls.clear();
      await store.putCheckpoint({ record: { ...record(thread, "cp-s"), checkpointNs: "sub" }, blobs: [], chunks: [] });
      expect(Object.fromEntries(wrapper.calls)).toEqual({ PutItem: 1 });
    } finally {
      await drop();
    }
  });

  it("a status patch whose response was lost is applied once when retried: an attempt is counted once", async () => {
    for (const [label, fenced] of [["plain", false], ["fenced", true]] as const) {
      const wrapper = new LostResponseClient(client, fenced ? "TransactWriteItems" : "PutItem");
      const { store, drop } = await freshStore(wrapper, `mw_lost_${label}`, { manyWorkers: true, retry: { baseDelayMs: 1, maxDelayMs: 5 } }, client);
      try {
        const thread = threadId("lost");
        const lease = await store.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 });
        const fence = fenced ? { fence: { token: lease!.token, workerId: "w" } } : {};
        await store.putCheckpoint({ record: record(thread, "cp-1", { channelVersions: { n: "1" } }), blobs: [blob("n", "1")], chunks: [], ...fence, status: { state: "pending", updatedAt: 1 } });
        for (let attempt = 1; attempt <= 3; attempt += 1) {
          wrapper.lose = 1;
          const patched = await store.patchThreadStatus({ threadId: thread, patch: { checkpointId: "cp-1", addAttempts: 1, attemptedAt: 10 + attempt, updatedAt: 10 + attempt }, ...fence });
          expect(wrapper.lost, label).toBe(attempt);
          expect(patched, label).toMatchObject({ attempts: attempt, attemptedAt: 10 + attempt });
          expect(await store.getThreadStatus(thread), label).toMatchObject({ state: "pending", checkpointId: "cp-1", attempts: attempt });
        }
      } finally {
        await drop();
      }
    }
  });

  it("the README's many-workers CloudFormation and Terraform snippets are the ones tableTemplate() prints", () => {
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain(tableTemplate("cloudformation", "checkpoints", { manyWorkers: true }));
    expect(readme).toContain(tableTemplate("terraform", "checkpoints", { manyWorkers: true }));
  });
});
