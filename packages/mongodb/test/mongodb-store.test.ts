import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidConfigError, StoreClosedError, StoreNotSetUpError, ValueTooLargeError, type StoredCheckpoint } from "@resumable/core";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

import { LAYOUT_VERSION, MongoDBSaver, MongoDBStore, MongoUnavailableError } from "../src/index.js";
import { HANDLERS, TestServer, blob, cid, decode, empty, json, record, threadId, write } from "./helpers.js";

async function collect(iterable: AsyncIterable<StoredCheckpoint>): Promise<StoredCheckpoint[]> {
  const out: StoredCheckpoint[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

describe.each(HANDLERS)("MongoDBStore on FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  let store: MongoDBStore;

  beforeAll(async () => {
    await server.init();
    store = new MongoDBStore(server.client, { dbName: await server.database("store"), pageSize: 3 });
    await store.setup();
  });
  afterAll(() => server.closeAll());

  /** A chain of checkpoints on one thread; blob "a" changes every step, "b" only at step 0. */
  async function chain(thread: string, length: number, ns = ""): Promise<void> {
    for (let i = 0; i < length; i++) {
      await store.putCheckpoint({
        record: record(thread, cid(i), {
          checkpointNs: ns,
          parentCheckpointId: i === 0 ? undefined : cid(i - 1),
          metadataJson: { source: "loop", step: i, tags: i % 2 === 0 ? ["even"] : ["odd", "x"] },
          channelVersions: { a: String(i + 1), b: "1" },
        }),
        blobs: i === 0 ? [blob("a", "1"), blob("b", "1")] : [blob("a", String(i + 1))],
        chunks: [],
      });
    }
  }

  /** How many documents of the thread each collection holds. */
  async function documents(thread: string): Promise<Record<string, number>> {
    const { checkpoints, blobs, writes, chunks } = store.collections;
    const count = (c: { countDocuments(filter: object): Promise<number> }) => c.countDocuments({ thread_id: thread });
    return { checkpoints: await count(checkpoints), blobs: await count(blobs), writes: await count(writes), chunks: await count(chunks) };
  }

  it("returns the newest checkpoint with every blob it references (carried over by version) and its writes", async () => {
    const t = threadId();
    await chain(t, 3);
    await store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(2), writes: [write("task", 0, "a", "w0")], chunks: [], mode: "ignore" });
    const latest = await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    expect(latest?.record.checkpointId).toBe(cid(2));
    expect(latest?.record.parentCheckpointId).toBe(cid(1));
    expect(latest?.record.metadataJson).toEqual({ source: "loop", step: 2, tags: ["even"] });
    expect(latest?.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@3", "b@1"]);
    expect(latest?.writes.map((w) => decode(w.value))).toEqual(["w0"]);
    const first = await store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: cid(0) });
    expect(first?.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@1", "b@1"]);
    expect(first?.writes).toEqual([]);
    expect(await store.getCheckpoint({ threadId: t, checkpointNs: "other" })).toBeUndefined();
    expect(await store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: "missing" })).toBeUndefined();
  });

  it("keeps the first write of a (task, idx) in ignore mode and replaces it in upsert mode", async () => {
    const t = threadId();
    await chain(t, 1);
    const put = (value: string, mode: "ignore" | "upsert") =>
      store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(0), writes: [write("task", -3, "__interrupt__", value)], chunks: [], mode });
    await put("first", "ignore");
    await put("second", "ignore");
    expect((await store.getCheckpoint({ threadId: t, checkpointNs: "" }))?.writes.map((w) => decode(w.value))).toEqual(["first"]);
    await put("third", "upsert");
    await Promise.all([put("fourth", "upsert"), put("fourth", "upsert"), put("fifth", "ignore")]);
    expect((await store.getCheckpoint({ threadId: t, checkpointNs: "" }))?.writes.map((w) => decode(w.value))).toEqual(["fourth"]);
    expect((await documents(t)).writes).toBe(1);
  });

  it("lists newest first through several pages, with before and limit", async () => {
    const t = threadId();
    await chain(t, 8);
    const all = await collect(store.listCheckpoints({ threadId: t, checkpointNs: "" }));
    expect(all.map((s) => s.record.checkpointId)).toEqual([7, 6, 5, 4, 3, 2, 1, 0].map(cid));
    expect(all[0]!.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@8", "b@1"]);
    const before = await collect(store.listCheckpoints({ threadId: t, before: cid(5), limit: 4 }));
    expect(before.map((s) => s.record.checkpointId)).toEqual([4, 3, 2, 1].map(cid));
    expect((await collect(store.listCheckpoints({ threadId: t, checkpointId: cid(3) }))).map((s) => s.record.checkpointId)).toEqual([cid(3)]);
  });

  it("lists every checkpoint of every thread and namespace exactly once, across pages", async () => {
    const [t1, t2] = [threadId("all"), threadId("all")];
    await chain(t1, 4);
    await chain(t1, 2, "child:1");
    await chain(t2, 5);
    const all = await collect(store.listCheckpoints({}));
    const mine = all.filter((s) => s.record.threadId === t1 || s.record.threadId === t2).map((s) => `${s.record.threadId}/${s.record.checkpointNs}/${s.record.checkpointId}`);
    expect(mine).toHaveLength(11);
    expect(new Set(mine).size).toBe(11);
    const namespaces = await collect(store.listCheckpoints({ threadId: t1 }));
    expect(namespaces.map((s) => `${s.record.checkpointNs}/${s.record.checkpointId}`)).toEqual(
      ["child:1/" + cid(1), "child:1/" + cid(0), ...[3, 2, 1, 0].map((i) => "/" + cid(i))],
    );
  });

  it("filters metadata natively by exact per-key equality, not containment", async () => {
    const t = threadId();
    await chain(t, 4);
    const ids = async (filter: Record<string, unknown>, limit?: number) =>
      (await collect(store.listCheckpoints({ threadId: t, filter, ...(limit === undefined ? {} : { limit }) }))).map((s) => s.record.checkpointId);
    expect(await ids({ tags: ["even"] })).toEqual([cid(2), cid(0)]);
    expect(await ids({ tags: ["odd"] })).toEqual([]);
    expect(await ids({ tags: ["odd", "x"], step: 3 })).toEqual([cid(3)]);
    expect(await ids({ step: null })).toEqual([]);
    expect(await ids({ source: "loop" }, 2)).toEqual([cid(3), cid(2)]);
    const everywhere = await collect(store.listCheckpoints({ filter: { step: 3, tags: ["odd", "x"] } }));
    expect(everywhere.filter((s) => s.record.threadId === t)).toHaveLength(1);
  });

  it("never shows a checkpoint whose parts did not all land, and deleteThread removes the parts a crash left", async () => {
    const t = threadId("torn");
    await chain(t, 1);
    // The process dies right after the blobs were stored, before the checkpoint document.
    store.instrument((event) => {
      if (event.command === "insert blobs") throw new Error("killed after insert blobs");
    });
    try {
      await expect(
        store.putCheckpoint({
          record: record(t, cid(1), { parentCheckpointId: cid(0), channelVersions: { a: "2", b: "1" } }),
          blobs: [blob("a", "2")],
          chunks: [{ hash: "h-torn", index: 0, data: new Uint8Array([1, 2]) }],
        }),
      ).rejects.toThrow("killed after insert blobs");
    } finally {
      store.instrument(undefined);
    }
    expect((await store.getCheckpoint({ threadId: t, checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    expect((await collect(store.listCheckpoints({ threadId: t }))).map((s) => s.record.checkpointId)).toEqual([cid(0)]);
    expect(await documents(t)).toEqual({ checkpoints: 1, blobs: 3, writes: 0, chunks: 1 });
    await store.deleteThread(t);
    expect(await documents(t)).toEqual({ checkpoints: 0, blobs: 0, writes: 0, chunks: 0 });
  });

  it("stores hostile ids literally: strings that look like operators, dotted and $-prefixed", async () => {
    const hostile = [`{"$ne": null}`, "$where", "a.b.c", "$gt", `'; db.dropDatabase(); //`, "ünïcødé 😀", ""];
    for (const id of hostile) {
      const t = `${threadId()}${id}`;
      await store.putCheckpoint({
        record: record(t, `${id}cp`, { checkpointNs: id, metadataJson: { [id]: id, [`${id}.x`]: { [`$${id}`]: id } }, channelVersions: { [`${id}ch`]: `${id}1` } }),
        blobs: [blob(`${id}ch`, `${id}1`)],
        chunks: [],
      });
      await store.putWrites({ threadId: t, checkpointNs: id, checkpointId: `${id}cp`, writes: [write(`${id}task`, 0, `${id}ch`, id, id)], chunks: [], mode: "ignore" });
      const got = await store.getCheckpoint({ threadId: t, checkpointNs: id });
      expect(got?.record.threadId).toBe(t);
      expect(got?.record.checkpointId).toBe(`${id}cp`);
      expect(got?.record.metadataJson).toEqual({ [id]: id, [`${id}.x`]: { [`$${id}`]: id } });
      expect(got?.blobs.map((b) => b.channel)).toEqual([`${id}ch`]);
      expect(got?.writes[0]?.taskId).toBe(`${id}task`);
      expect(got?.writes[0]?.taskPath).toBe(id);
      expect(await collect(store.listCheckpoints({ threadId: t, filter: { [`${id}.x`]: { [`$${id}`]: id } } }))).toHaveLength(1);
      await store.deleteThread(t);
      expect(await store.getCheckpoint({ threadId: t, checkpointNs: id })).toBeUndefined();
    }
  });

  it("refuses ids that are not strings or break core's id rule, naming the field, and stores nothing", async () => {
    const t = threadId();
    const operator = { $ne: null } as unknown as string;
    const cases: Array<[string, () => Promise<unknown>]> = [
      ["thread_id", () => store.getCheckpoint({ threadId: operator, checkpointNs: "" })],
      ["checkpoint_ns", () => store.getCheckpoint({ threadId: t, checkpointNs: { $gt: "" } as unknown as string })],
      ["checkpoint_id", () => store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: { $regex: ".*" } as unknown as string })],
      ["before.checkpoint_id", () => collect(store.listCheckpoints({ threadId: t, before: { $gt: "" } as unknown as string }))],
      ["thread_id", () => store.deleteThread(operator)],
      ["thread_id", () => store.putCheckpoint({ record: record(`${t}\u0000`, cid(0)), blobs: [], chunks: [] })],
      ["task id", () => store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(0), writes: [write(operator, 0, "c", 1)], chunks: [], mode: "ignore" })],
    ];
    for (const [field, call] of cases) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error, field).toBeInstanceOf(InvalidConfigError);
      expect((error as InvalidConfigError).field).toBe(field);
    }
    expect(await documents(t)).toEqual({ checkpoints: 0, blobs: 0, writes: 0, chunks: 0 });
  });

  it("round-trips values with NUL bytes, empty values and megabytes of data, and refuses a checkpoint document over 16 MB", async () => {
    const t = threadId();
    const big = new Uint8Array(1024 * 1024).map((_, i) => i % 251);
    const nul = { type: "json", data: new TextEncoder().encode('"\\u0000\u0000"') };
    await store.putCheckpoint({
      record: record(t, cid(0), { channelVersions: { big: "1", nul: "1", e: "1" } }),
      blobs: [blob("big", "1", { type: "bytes", data: big }), blob("nul", "1", nul), blob("e", "1", empty())],
      chunks: [],
    });
    const got = await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    const byChannel = new Map(got!.blobs.map((b) => [b.channel, b.value]));
    expect(Buffer.compare(Buffer.from(byChannel.get("big")!.data), Buffer.from(big))).toBe(0);
    expect(byChannel.get("big")?.data).toBeInstanceOf(Uint8Array);
    expect(byChannel.get("nul")).toEqual(nul);
    expect(byChannel.get("e")).toEqual(empty());
    const huge = { note: "x".repeat(17 * 1024 * 1024) };
    const error = await store.putCheckpoint({ record: record(t, cid(1), { metadataJson: huge }), blobs: [], chunks: [] }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(ValueTooLargeError);
    expect((error as Error).message).toMatch(/checkpoint cp-000001.*16/);
    expect((await documents(t)).checkpoints).toBe(1);
  });

  it("returns a delta channel's ancestors back to its seed, with the seed's delta range", async () => {
    const t = threadId();
    for (let i = 0; i < 30; i++) {
      const seed = i === 4 || i === 20;
      await store.putCheckpoint({
        record: record(t, cid(i), { parentCheckpointId: i === 0 ? undefined : cid(i - 1), channelVersions: { d: `v${String(i + 1).padStart(2, "0")}` } }),
        blobs: [blob("d", `v${String(i + 1).padStart(2, "0")}`, seed ? json(`seed${i}`) : empty())],
        chunks: [],
      });
      await store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(i), writes: [write(`task${i}`, 0, "d", i), write(`task${i}`, 1, "other", i)], chunks: [], mode: "ignore" });
    }
    const { ancestors } = await store.getHistory({ threadId: t, checkpointNs: "", checkpointId: cid(29), channels: ["d"] });
    expect(ancestors.map((a) => a.checkpointId)).toEqual([28, 27, 26, 25, 24, 23, 22, 21, 20].map(cid));
    expect(ancestors[0]!.writes.map((w) => w.channel)).toEqual(["d"]);
    expect(ancestors.at(-1)!.blobs.map((b) => decode(b.value))).toEqual(["seed20"]);
    const deeper = await store.getHistory({ threadId: t, checkpointNs: "", checkpointId: cid(20), channels: ["d", "never"] });
    expect(deeper.ancestors.map((a) => a.checkpointId)).toEqual([19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0].map(cid));
    expect((await store.getHistory({ threadId: t, checkpointNs: "", checkpointId: "missing", channels: ["d"] })).ancestors).toEqual([]);
    // A seed that is a delta comes with every blob of its range.
    const u = threadId();
    await store.putCheckpoint({ record: record(u, cid(0), { channelVersions: { d: "1" } }), blobs: [blob("d", "1", json(["a"]))], chunks: [] });
    await store.putCheckpoint({
      record: record(u, cid(1), { parentCheckpointId: cid(0), channelVersions: { d: "2" }, deltaRoots: { d: "1" } }),
      blobs: [{ ...blob("d", "2", json(["b"])), baseVersion: "1" }],
      chunks: [],
    });
    await store.putCheckpoint({ record: record(u, cid(2), { parentCheckpointId: cid(1), channelVersions: { d: "2" } }), blobs: [], chunks: [] });
    const ranged = await store.getHistory({ threadId: u, checkpointNs: "", checkpointId: cid(2), channels: ["d"] });
    expect(ranged.ancestors.map((a) => [a.checkpointId, a.deltaRoots, a.blobs.map((b) => `${b.version}<${b.baseVersion ?? ""}`).sort()])).toEqual([
      [cid(1), { d: "1" }, ["1<", "2<1"]],
    ]);
  });

  it("fetches blobs by key and chunks by hash, and returns the chunks a page references", async () => {
    const t = threadId();
    const chunks = [0, 1, 2].map((index) => ({ hash: "h1", index, data: new Uint8Array([index, 0, 255]) }));
    const split = { type: "json", data: new Uint8Array(0), chunkRef: { hash: "h1", count: 3, size: 9 } };
    await store.putCheckpoint({ record: record(t, cid(0), { channelVersions: { a: "1" } }), blobs: [blob("a", "1", split), blob("a", "2")], chunks });
    await store.putCheckpoint({ record: record(t, cid(1)), blobs: [blob("a", "1", json("other"))], chunks: chunks.slice(0, 1) });
    expect((await store.getChunks(t, ["h1"])).map((c) => [c.index, [...c.data]]).sort()).toEqual([[0, [0, 0, 255]], [1, [1, 0, 255]], [2, [2, 0, 255]]]);
    const blobs = await store.getBlobs({ threadId: t, checkpointNs: "" }, [{ channel: "a", version: "2" }, { channel: "a", version: "1" }, { channel: "a", version: "9" }]);
    expect(blobs.map((b) => b.version).sort()).toEqual(["1", "2"]);
    const got = await store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: cid(0) });
    expect(got?.blobs[0]?.value.chunkRef).toEqual(split.chunkRef);
    expect(got?.chunks?.map((c) => c.index).sort()).toEqual([0, 1, 2]);
  });

  it("deletes every document of one thread, in every namespace, and nothing of another", async () => {
    const [gone, kept] = [threadId("gone"), threadId("kept")];
    for (const t of [gone, kept, `${gone}x`]) {
      await chain(t, 2);
      await chain(t, 2, "sub");
      await store.putWrites({ threadId: t, checkpointNs: "sub", checkpointId: cid(1), writes: [write("x", 0, "a", 1)], chunks: [{ hash: "h", index: 0, data: new Uint8Array([1]) }], mode: "ignore" });
    }
    await store.deleteThread(gone);
    expect(await documents(gone)).toEqual({ checkpoints: 0, blobs: 0, writes: 0, chunks: 0 });
    expect(await documents(kept)).toEqual({ checkpoints: 4, blobs: 6, writes: 1, chunks: 1 });
    expect(await documents(`${gone}x`)).toEqual({ checkpoints: 4, blobs: 6, writes: 1, chunks: 1 });
  });

  it("reports each database command to an instrumentation listener", async () => {
    const t = threadId();
    const seen: string[] = [];
    store.instrument((event) => seen.push(event.command));
    try {
      await chain(t, 2);
      await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    } finally {
      store.instrument(undefined);
    }
    expect(seen.slice(0, 4)).toEqual(["insert blobs", "upsert checkpoint", "insert blobs", "upsert checkpoint"]);
    expect(seen.slice(4).sort()).toEqual(["find blobs", "find checkpoint", "find writes"]);
  });

  it("sets up idempotently from several clients at once, says when setup() was not run, and refuses a newer layout", async () => {
    const name = await server.database("setup");
    const fresh = new MongoDBStore(server.client, { dbName: name });
    const error = await fresh.getCheckpoint({ threadId: "t", checkpointNs: "" }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toMatch(/setup\(\)/);
    await Promise.all(Array.from({ length: 4 }, () => new MongoDBStore(server.client, { dbName: name }).setup()));
    await fresh.setup();
    await fresh.putCheckpoint({ record: record("t", cid(0)), blobs: [], chunks: [] });
    expect((await fresh.getCheckpoint({ threadId: "t", checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    expect((await fresh.collections.checkpoints.indexes()).map((i) => i.name).sort()).toEqual(["_id_", "metadata_kv", "thread_ns_checkpoint"]);
    await fresh.collections.meta.updateOne({ _id: "layout" }, { $set: { version: LAYOUT_VERSION + 1 } });
    await expect(new MongoDBStore(server.client, { dbName: name }).getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toThrow(/newer/);
    await expect(new MongoDBStore(server.client, { dbName: name }).setup()).rejects.toBeInstanceOf(StoreNotSetUpError);
  });

  it("refuses bad options and URLs with errors naming them, and is unusable after close()", async () => {
    expect(() => new MongoDBStore(server.client, { dbName: "a.b" })).toThrow(InvalidConfigError);
    expect(() => new MongoDBStore(server.client, { collectionPrefix: "a.b" })).toThrow(InvalidConfigError);
    expect(() => new MongoDBStore(server.client, { chunkBytes: 32 * 1024 * 1024 })).toThrow(/chunkBytes/);
    expect(() => new MongoDBStore(server.client, { ttlSeconds: -1 })).toThrow(/ttlSeconds/);
    await expect(MongoDBStore.connect("")).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(MongoDBStore.connect("postgres://localhost/x")).rejects.toThrow(/mongodb:\/\//);
    await expect(MongoDBStore.connect("mongodb://127.0.0.1:1/x", { client: { serverSelectionTimeoutMS: 300 } })).rejects.toBeInstanceOf(MongoUnavailableError);
    const own = await MongoDBStore.connect(server.server.url, { dbName: await server.database("closed") });
    await own.setup();
    await own.close();
    await expect(own.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreClosedError);
    // A client the caller handed in stays open.
    const handed = new MongoDBStore(server.client, { dbName: await server.database("handed") });
    await handed.close();
    expect(await server.client.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
  });
});

describe.each(HANDLERS)("MongoDBSaver on FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  beforeAll(() => server.init());
  afterAll(() => server.closeAll());

  it("checkpoints a LangGraph graph, splits values over chunkBytes into chunks, and resumes it from a new saver", async () => {
    const State = Annotation.Root({ items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const build = (checkpointer: MongoDBSaver) =>
      new StateGraph(State)
        .addNode("one", () => ({ items: ["x".repeat(5000)] }))
        .addNode("two", () => ({ items: ["two"] }))
        .addEdge(START, "one")
        .addEdge("one", "two")
        .addEdge("two", END)
        .compile({ checkpointer });
    const { name: dbName, url } = await server.databaseWithUrl("saver");
    const saver = await MongoDBSaver.connect(url, { chunkBytes: 1024 });
    try {
      expect(saver.store.db.databaseName).toBe(dbName);
      const config = { configurable: { thread_id: threadId("graph") } };
      await build(saver).invoke({ items: ["start"] }, config);
      // LangChain's constructor shape: a client and a database name.
      const again = new MongoDBSaver({ client: server.client, dbName, chunkBytes: 1024 });
      const state = await build(again).getState(config);
      expect(state.values.items).toEqual(["start", "x".repeat(5000), "two"]);
      const history = [];
      for await (const snapshot of build(again).getStateHistory(config)) history.push(snapshot);
      expect(history.length).toBe(4);
      expect(await again.store.collections.chunks.countDocuments({})).toBeGreaterThan(0);
      await again.close();
      expect(await server.client.db("admin").command({ ping: 1 })).toMatchObject({ ok: 1 });
    } finally {
      await saver.close();
    }
  });
});
