// Atomic without transactions: parts first, the checkpoint item last. A put cut short leaves only
// parts no reader can see, which deleteThread removes; the checkpoint item never lands before the
// writes in flight for its thread; deleteThread takes checkpoints away before their parts.
import { BatchWriteItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ResumableSaver } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBStore, type DynamoDBClientLike } from "../src/index.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, blob, chunkOf, cid, clientFor, collect, freshStore, json, rawItems, record, threadId, write } from "./helpers.js";

/** Logs each request as it is sent and as it completes: `send PutItem c`, `done PutItem w`... */
function logging(inner: DynamoDBClientLike, delayWritesMs = 0): DynamoDBClientLike & { log: string[]; onSend?: (entry: string) => void } {
  const log: string[] = [];
  const wrapper: DynamoDBClientLike & { log: string[]; onSend?: (entry: string) => void } = {
    log,
    async send(command: any) {
      const name = String(command.constructor.name).replace(/Command$/, "");
      const kind =
        command instanceof PutItemCommand
          ? String(command.input.Item?.["sk"]?.S).slice(0, 1)
          : command instanceof BatchWriteItemCommand
            ? [...new Set(Object.values(command.input.RequestItems ?? {})[0]!.map((r) => String((r.PutRequest?.Item ?? r.DeleteRequest?.Key)?.["sk"]?.S).slice(0, 1)))].sort().join("")
            : "";
      log.push(`send ${name} ${kind}`);
      wrapper.onSend?.(`send ${name} ${kind}`);
      if (delayWritesMs > 0 && kind === "w") await new Promise((resolve) => setTimeout(resolve, delayWritesMs));
      const out = await inner.send(command);
      log.push(`done ${name} ${kind}`);
      return out;
    },
  };
  return wrapper;
}

describe.each(EMULATORS)("atomicity on %s", (emulator) => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let tableName: string;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    ({ store, tableName, drop } = await freshStore(client, "atomic"));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  it("a put cut short before its checkpoint item leaves parts no reader sees, and deleteThread removes them all", async () => {
    const thread = threadId("cut");
    await store.putCheckpoint({ record: record(thread, cid(1), { channelVersions: { a: "1" } }), blobs: [blob("a", "1")], chunks: [] });
    // The checkpoint item of cp 2 is refused: its blobs, chunks and spilled metadata are stored, it is not.
    const faulty = new FaultClient(client, { alwaysThrottle: ["PutItem"] });
    const cut = new DynamoDBStore(faulty, { tableName, retry: { maxAttempts: 1, baseDelayMs: 0 } });
    const big = { a: "m".repeat(500_000) };
    await expect(
      cut.putCheckpoint({
        record: record(thread, cid(2), { parentCheckpointId: cid(1), channelVersions: { a: "2", b: "2" }, metadataJson: big }),
        blobs: [blob("a", "2"), { channel: "b", version: "2", value: { type: "json", data: new Uint8Array(0), chunkRef: { hash: "h2", count: 2, size: 2 } } }],
        chunks: [chunkOf("h2", 0, "x"), chunkOf("h2", 1, "y")],
      }),
    ).rejects.toThrow(/throttled/);
    // Writes on a checkpoint that never became durable (as a crash in "async" durability leaves them).
    await store.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(2), writes: [write("task", 0, "a", "orphan")], chunks: [chunkOf("h3", 0, "z")], mode: "ignore" });
    const latest = await store.getCheckpoint({ threadId: thread, checkpointNs: "" });
    expect(latest?.record.checkpointId).toBe(cid(1));
    expect(latest?.blobs.map((b) => b.version)).toEqual(["1"]);
    expect(await store.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(2) })).toBeUndefined();
    expect((await collect(store.listCheckpoints({ threadId: thread }))).map((s) => s.record.checkpointId)).toEqual([cid(1)]);
    expect((await store.getHistory({ threadId: thread, checkpointNs: "", checkpointId: cid(2), channels: ["a"] })).ancestors).toEqual([]);
    const kinds = (await rawItems(client, tableName, thread)).map((i) => i["sk"]!.S!.slice(0, 1)).sort();
    // Three blobs, cp 1, chunks h2 (2) and h3, the spilled cp 2 (its 500 KB of metadata JSON, 2 chunks), one write.
    expect(kinds).toEqual(["b", "b", "b", "c", "k", "k", "k", "k", "k", "w"]);
    await store.deleteThread(thread);
    expect(await rawItems(client, tableName, thread)).toEqual([]);
  });

  it("the checkpoint item waits for the writes its process has in flight on the thread", async () => {
    const thread = threadId("order");
    const slow = logging(client, 300);
    const saver = new ResumableSaver(new DynamoDBStore(slow, { tableName }));
    const first = await saver.put({ configurable: { thread_id: thread, checkpoint_ns: "" } }, { v: 4, id: cid(1), ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} }, { source: "input", step: -1, parents: {} }, {});
    slow.log.length = 0;
    // LangGraph issues an input checkpoint's put first and its input writes right after: here, once
    // the put is past the saver and has sent its blobs.
    let writes: Promise<void> | undefined;
    slow.onSend = (entry) => {
      if (entry === "send BatchWriteItem b" && !writes) writes = saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: cid(2) } }, [["a", 2], ["b", 3]], "input-task");
    };
    await saver.put(first, { v: 4, id: cid(2), ts: "", channel_values: { a: 1 }, channel_versions: { a: 2 }, versions_seen: {} }, { source: "input", step: -1, parents: {} }, { a: 2 });
    await writes;
    const checkpointSent = slow.log.indexOf("send PutItem c");
    expect(checkpointSent).toBeGreaterThan(slow.log.lastIndexOf("done PutItem w"));
    expect(slow.log.indexOf("send PutItem c")).toBeGreaterThan(slow.log.indexOf("done BatchWriteItem b"));
  });

  it("deleteThread removes checkpoints before their parts", async () => {
    const thread = threadId("delete");
    for (let i = 1; i <= 30; i += 1) {
      await store.putCheckpoint({ record: record(thread, cid(i), { channelVersions: { a: String(i) } }), blobs: [blob("a", String(i), json(i))], chunks: [] });
    }
    const watched = logging(client);
    await new DynamoDBStore(watched, { tableName }).deleteThread(thread);
    const deletes = watched.log.filter((l) => l.startsWith("send BatchWriteItem"));
    expect(deletes).toEqual(["send BatchWriteItem c", "send BatchWriteItem c", "send BatchWriteItem b", "send BatchWriteItem b"]);
    expect(watched.log.indexOf("send BatchWriteItem b")).toBeGreaterThan(watched.log.lastIndexOf("done BatchWriteItem c"));
    expect(await rawItems(client, tableName, thread)).toEqual([]);
  });
});
