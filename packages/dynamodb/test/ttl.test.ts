// Whole-thread TTL: one epoch on every item of a thread, re-stamped together, expired threads hidden
// from readers before DynamoDB deletes them, and setup() enabling TTL where the endpoint has the API.
// Time moves with a faked Date in this test process only (the emulators keep their own clocks).
import { DeleteTableCommand, DescribeTimeToLiveCommand, UpdateItemCommand, UpdateTimeToLiveCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, ResumableSaver } from "@resumable/core";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";

import { DynamoDBStore } from "../src/index.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, clientFor, collect, freshStore, rawItems, threadId } from "./helpers.js";
import { dynamoDbTestTableName } from "@resumable/test-servers";

const DAY = 86_400;

function checkpoint(id: string, values: Record<string, unknown>, version: number): Checkpoint {
  return { v: 4, id, ts: new Date(0).toISOString(), channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, version])), versions_seen: {} };
}

/** Puts checkpoint `n` of a chain (with a large value, so there are chunks) and a write on it. */
async function step(saver: ResumableSaver, thread: string, n: number): Promise<void> {
  const config = { configurable: { thread_id: thread, checkpoint_ns: "", ...(n > 1 ? { checkpoint_id: `cp-${n - 1}` } : {}) } };
  const saved = await saver.put(config, checkpoint(`cp-${n}`, { a: `a${n}`, big: "b".repeat(700_000 + n) }, n), { source: "loop", step: n, parents: {} }, { a: n, big: n });
  await saver.putWrites(saved, [["a", `w${n}`]], `task-${n}`);
}

const epochs = (items: Array<Record<string, { N?: string }>>) => new Set(items.map((i) => i["expires_at"]?.N));

describe.each(EMULATORS)("whole-thread TTL on %s", (emulator) => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let tableName: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    ({ store, tableName, drop } = await freshStore(client, "ttl", { ttl: { seconds: 30 * DAY, refreshSeconds: DAY } }));
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  it("stamps every item of a thread with one epoch, re-stamps them all together, and hides the thread once it passed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = Date.now();
    const thread = threadId("ttl");
    const saver = new ResumableSaver(store);
    await step(saver, thread, 1);
    await step(saver, thread, 2);
    const first = Math.ceil(start / 1000 + 30 * DAY);
    let items = await rawItems(client, tableName, thread);
    expect(items.length).toBeGreaterThan(6); // checkpoints, blobs, writes, chunks
    expect(epochs(items)).toEqual(new Set([String(first)]));

    // Within the refresh window nothing is re-stamped; past it, the next checkpoint moves every item.
    vi.setSystemTime(start + 0.5 * DAY * 1000);
    await step(saver, thread, 3);
    expect(epochs(await rawItems(client, tableName, thread))).toEqual(new Set([String(first)]));
    vi.setSystemTime(start + 2 * DAY * 1000);
    await step(saver, thread, 4);
    const second = Math.ceil(start / 1000 + 32 * DAY);
    items = await rawItems(client, tableName, thread);
    expect(epochs(items)).toEqual(new Set([String(second)]));

    // Writes never re-stamp; a fresh store learns the thread's epoch from the table.
    vi.setSystemTime(start + 3.5 * DAY * 1000);
    const other = new ResumableSaver(new DynamoDBStore(client, { tableName, ttl: { seconds: 30 * DAY, refreshSeconds: DAY } }));
    await other.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: "cp-4" } }, [["a", "late"]], "task-late");
    expect(epochs(await rawItems(client, tableName, thread))).toEqual(new Set([String(second)]));
    expect((await other.getTuple({ configurable: { thread_id: thread } }))?.pendingWrites?.map((w) => w[2])).toEqual(["w4", "late"]);

    // Past the epoch the whole thread is gone for readers, whatever DynamoDB has deleted so far.
    vi.setSystemTime((second + 1) * 1000);
    expect(await other.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();
    expect(await other.getTuple({ configurable: { thread_id: thread, checkpoint_id: "cp-2" } })).toBeUndefined();
    expect(await collect(other.list({ configurable: { thread_id: thread } }))).toEqual([]);
    expect((await rawItems(client, tableName, thread)).length).toBe(items.length + 1);
    // A new run on the expired thread starts over with a new epoch; the old items stay hidden.
    await step(other, thread, 1);
    expect((await collect(other.list({ configurable: { thread_id: thread } }))).map((t) => t.config.configurable?.checkpoint_id)).toEqual(["cp-1"]);
    await other.deleteThread(thread);
    expect(await rawItems(client, tableName, thread)).toEqual([]);
  });

  it("a re-stamp cut short leaves every dependent at least as late as the checkpoints, and the next checkpoint finishes it", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const start = Date.now();
    const thread = threadId("cut");
    const faulty = new FaultClient(client);
    const ttl = { seconds: 30 * DAY, refreshSeconds: DAY };
    const saver = new ResumableSaver(new DynamoDBStore(faulty, { tableName, ttl, retry: { maxAttempts: 1 } }));
    for (let n = 1; n <= 3; n += 1) await step(saver, thread, n);
    vi.setSystemTime(start + 2 * DAY * 1000);
    // Let three updates through, slowly (as on a loaded machine), then refuse the rest. The put must
    // not reject before the updates it sent have landed: what it leaves is then exactly three items
    // re-stamped, and nothing changes behind the caller's back afterwards.
    let updates = 0;
    const send = faulty.send.bind(faulty);
    faulty.send = async (command: unknown) => {
      if (command instanceof UpdateItemCommand && ++updates > 3) throw Object.assign(new Error("connection reset (injected)"), { name: "Error", code: "ECONNRESET" });
      if (command instanceof UpdateItemCommand) await new Promise((resolve) => setTimeout(resolve, 300));
      return send(command);
    };
    await expect(step(saver, thread, 4)).rejects.toThrow(/unreachable/);
    const items = await rawItems(client, tableName, thread);
    const epochOf = (i: Record<string, { N?: string; S?: string }>) => Number(i["expires_at"]?.N);
    const checkpoints = items.filter((i) => i["sk"]!.S!.startsWith("c|"));
    const dependents = items.filter((i) => !i["sk"]!.S!.startsWith("c|"));
    expect(items.filter((i) => epochOf(i) === Math.ceil(start / 1000 + 32 * DAY))).toHaveLength(3);
    expect(new Set(items.map(epochOf)).size).toBe(2);
    expect(Math.min(...dependents.map(epochOf))).toBeGreaterThanOrEqual(Math.max(...checkpoints.map(epochOf)));
    faulty.send = send;
    await step(saver, thread, 4);
    expect(epochs(await rawItems(client, tableName, thread))).toEqual(new Set([String(Math.ceil(start / 1000 + 32 * DAY))]));
  });

  it("setup() enables TTL on the table where the endpoint has the TTL API, and says so clearly where it has none", async (ctx) => {
    // The capability, asked of the endpoint: enabling TTL on this file's table (its items carry expires_at).
    const hasTtlApi = await client.send(new UpdateTimeToLiveCommand({ TableName: tableName, TimeToLiveSpecification: { AttributeName: "expires_at", Enabled: true } })).then(
      () => true,
      (error: Error) => (error.name === "UnknownOperationException" ? false : Promise.reject(error)),
    );
    const name = dynamoDbTestTableName("ttl_setup");
    const withTtl = new DynamoDBStore(client, { tableName: name, createTable: true, ttl: { seconds: DAY, enableOnTable: true } });
    try {
      if (!hasTtlApi) {
        // dynalite: no TTL API. The table is still created; items still carry the epoch.
        const error = await withTtl.setup().catch((e: unknown) => e);
        expect(error).toBeInstanceOf(InvalidConfigError);
        expect((error as InvalidConfigError).field).toBe("ttl.enableOnTable");
        expect((error as Error).message).toMatch(/no TTL API.*enableOnTable: false/);
        ctx.skip(`${emulator} has no TTL API (UpdateTimeToLive: UnknownOperationException): enabling TTL is checked on the emulators that have it`);
        return;
      }
      await withTtl.setup();
      await withTtl.setup(); // idempotent
      const described = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
      expect(described.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: "ENABLED", AttributeName: "expires_at" });
      const clash = new DynamoDBStore(client, { tableName: name, ttl: { seconds: DAY, attribute: "other_epoch", enableOnTable: true } });
      await expect(clash.setup()).rejects.toThrow(/already enabled on "expires_at"/);
    } finally {
      await client.send(new DeleteTableCommand({ TableName: name })).catch(() => {});
    }
  });

  it("refuses TTL options it cannot honour", () => {
    const make = (ttl: object) => () => new DynamoDBStore(client, { tableName, ttl: ttl as never });
    expect(make({ seconds: 0 })).toThrow(/ttl.seconds/);
    expect(make({ seconds: 100, refreshSeconds: 200 })).toThrow(/ttl.refreshSeconds/);
    expect(make({ seconds: 100, attribute: "sk" })).toThrow(/ttl.attribute/);
  });
});
