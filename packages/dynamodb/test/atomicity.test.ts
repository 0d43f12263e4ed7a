// Atomic without transactions: parts first, the checkpoint item last. A put cut short leaves only
// parts no reader can see, which deleteThread removes; the checkpoint item never lands before the
// writes in flight for its thread; a putWrites cut short shows none of its writes; deleteThread takes
// checkpoints away before their parts.
import { BatchWriteItemCommand, PutItemCommand, type DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ResumableSaver } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBStore, type DynamoDBClientLike } from "../src/index.js";
import { FaultClient } from "./fixtures/fault-client.js";
import { EMULATORS, blob, chunkOf, cid, clientFor, collect, decode, freshStore, json, rawItems, record, threadId, write } from "./helpers.js";

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

/**
 * A process that dies after `requests` requests: those reach the table, every later one is refused
 * before it is sent (as SIGKILL leaves the rest of an operation unsent).
 */
function dyingAfter(inner: DynamoDBClientLike, requests: number): DynamoDBClientLike & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    async send(command: any) {
      if (sent.length >= requests) throw new Error("the process was killed (simulated): this request was never sent");
      const sk = command instanceof PutItemCommand ? String(command.input.Item?.["sk"]?.S) : "";
      sent.push(`${String(command.constructor.name).replace(/Command$/, "")} ${sk.slice(0, 1)}`);
      return inner.send(command);
    },
  };
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

  it.each([1, 2, 3])(
    "a putWrites cut short after %i request(s) shows none of its writes, and the task's retry stores every write of its own",
    async (requests) => {
      const thread = threadId("torn");
      await store.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: [] });
      const scope = { threadId: thread, checkpointNs: "", checkpointId: cid(1) };
      // One task's writes: LangGraph takes a task with any write on its checkpoint as finished, so a
      // torn batch (the state update without the edge to the next node) would end the run early.
      const first = [write("task-1", 0, "log", "first run"), write("task-1", 1, "branch:to:charge", "first run"), write("task-1", 2, "extra", "first run")];
      const dying = dyingAfter(client, requests);
      await expect(new DynamoDBStore(dying, { tableName, retry: { maxAttempts: 1, baseDelayMs: 0 } }).putWrites({ ...scope, writes: first, chunks: [], mode: "ignore" })).rejects.toThrow(/killed/);
      expect(dying.sent.filter((r) => r === "PutItem w").length).toBeGreaterThan(0);
      // A fresh process reads the checkpoint: no write of the batch is visible.
      const fresh = new DynamoDBStore(client, { tableName });
      expect((await fresh.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.writes).toEqual([]);
      expect((await collect(fresh.listCheckpoints({ threadId: thread })))[0]?.writes).toEqual([]);
      // LangGraph re-runs the task (its output may differ): every write of the retry is what is stored.
      const retry = first.map((w) => ({ ...w, value: json("retry") }));
      await fresh.putWrites({ ...scope, writes: retry, chunks: [], mode: "ignore" });
      const stored = (await fresh.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.writes ?? [];
      expect(stored.map((w) => [w.idx, w.channel, decode(w.value)])).toEqual(retry.map((w) => [w.idx, w.channel, "retry"]));
      // A retry after that changes nothing (insert-or-ignore), and the history reads the same writes.
      await fresh.putWrites({ ...scope, writes: first, chunks: [], mode: "ignore" });
      expect(((await fresh.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.writes ?? []).map((w) => decode(w.value))).toEqual(["retry", "retry", "retry"]);
      await fresh.putCheckpoint({ record: record(thread, cid(2), { parentCheckpointId: cid(1), channelVersions: { log: "2" } }), blobs: [blob("log", "2")], chunks: [] });
      const history = await fresh.getHistory({ threadId: thread, checkpointNs: "", checkpointId: cid(2), channels: ["log"] });
      expect(history.ancestors.map((a) => a.writes.map((w) => [w.channel, decode(w.value)]))).toEqual([[["log", "retry"]]]);
    },
  );

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
