import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidConfigError, StoreNotSetUpError, type StoredCheckpoint } from "@resumable/core";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

import { PostgresSaver, PostgresStore } from "../src/index.js";
import { TestDb, blob, cid, decode, empty, json, record, threadId, write } from "./helpers.js";

const db = new TestDb();
let store: PostgresStore;

beforeAll(async () => {
  await db.init();
  store = new PostgresStore(db.pool(), { pageSize: 3 });
  await store.setup();
});
afterAll(() => db.closeAll());

async function collect(iterable: AsyncIterable<StoredCheckpoint>): Promise<StoredCheckpoint[]> {
  const out: StoredCheckpoint[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

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

describe("prepared statements", () => {
  const prepared = async (pool: ReturnType<TestDb["pool"]>) =>
    ((await pool.query("SELECT name FROM pg_prepared_statements WHERE name LIKE 'resumable\\_%'")).rows as Array<{ name: string }>).map((r) => r.name);

  it("reads a checkpoint, and writes a few rows, through one named statement per query text, parsed once per connection", async () => {
    const pool = db.pool({ max: 1 });
    const mine = new PostgresStore(pool);
    const thread = threadId("prepared");
    await mine.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: [] });
    expect(await prepared(pool)).toHaveLength(1);
    await mine.putCheckpoint({ record: record(thread, cid(2)), blobs: [], chunks: [] });
    expect(await prepared(pool)).toHaveLength(1);
    for (let i = 0; i < 3; i += 1) expect((await mine.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(2));
    expect(await prepared(pool)).toHaveLength(2);
    expect((await mine.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(1) }))?.record.checkpointId).toBe(cid(1));
    expect(await prepared(pool)).toHaveLength(3);
    // The text of a write grows with its rows: one of many rows is sent plain, so that a connection
    // prepares a bounded set of texts.
    const many = Array.from({ length: 7 }, (_, i) => write("task", i, "a", `w${i}`));
    await mine.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(2), writes: many, chunks: [], mode: "upsert" });
    expect(await prepared(pool)).toHaveLength(3);
    await mine.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(2), writes: many.slice(0, 2), chunks: [], mode: "upsert" });
    expect(await prepared(pool)).toHaveLength(4);
    expect((await mine.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.writes.map((w) => decode(w.value))).toEqual(many.map((_, i) => `w${i}`));
  });

  it("sends plain queries with preparedStatements: false, and refuses a non-boolean", async () => {
    const pool = db.pool({ max: 1 });
    const mine = new PostgresStore(pool, { preparedStatements: false });
    const thread = threadId("unprepared");
    await mine.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: [] });
    expect((await mine.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
    expect(await prepared(pool)).toEqual([]);
    expect(() => new PostgresStore(pool, { preparedStatements: "yes" as unknown as boolean })).toThrow(InvalidConfigError);
  });
});

describe("PostgresStore", () => {
  it("returns the newest checkpoint with every blob it references (carried over by version) and its writes", async () => {
    const t = threadId();
    await chain(t, 3);
    await store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(2), writes: [write("task", 0, "a", "w0")], chunks: [], mode: "ignore" });
    const latest = await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    expect(latest?.record.checkpointId).toBe(cid(2));
    expect(latest?.record.parentCheckpointId).toBe(cid(1));
    expect(latest?.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@3", "b@1"]);
    expect(latest?.writes.map((w) => decode(w.value))).toEqual(["w0"]);
    const first = await store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: cid(0) });
    expect(first?.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@1", "b@1"]);
    expect(first?.writes).toEqual([]);
    expect(await store.getCheckpoint({ threadId: t, checkpointNs: "other" })).toBeUndefined();
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
    expect((await store.getCheckpoint({ threadId: t, checkpointNs: "" }))?.writes.map((w) => decode(w.value))).toEqual(["third"]);
  });

  it("lists newest first through several pages, with before and limit", async () => {
    const t = threadId();
    await chain(t, 8);
    const all = await collect(store.listCheckpoints({ threadId: t, checkpointNs: "" }));
    expect(all.map((s) => s.record.checkpointId)).toEqual([7, 6, 5, 4, 3, 2, 1, 0].map(cid));
    expect(all[0]!.blobs.map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@8", "b@1"]);
    const before = await collect(store.listCheckpoints({ threadId: t, before: cid(5), limit: 4 }));
    expect(before.map((s) => s.record.checkpointId)).toEqual([4, 3, 2, 1].map(cid));
  });

  it("lists every checkpoint of every thread and namespace exactly once", async () => {
    const [t1, t2] = [threadId("all"), threadId("all")];
    await chain(t1, 4);
    await chain(t1, 2, "child:1");
    await chain(t2, 5);
    const all = await collect(store.listCheckpoints({}));
    const mine = all.filter((s) => s.record.threadId === t1 || s.record.threadId === t2).map((s) => `${s.record.threadId}/${s.record.checkpointNs}/${s.record.checkpointId}`);
    expect(mine).toHaveLength(11);
    expect(new Set(mine).size).toBe(11);
  });

  it("filters metadata by exact per-key equality, not mere containment", async () => {
    const t = threadId();
    await chain(t, 4);
    const ids = async (filter: Record<string, unknown>) =>
      (await collect(store.listCheckpoints({ threadId: t, filter }))).map((s) => s.record.checkpointId);
    expect(await ids({ tags: ["even"] })).toEqual([cid(2), cid(0)]);
    expect(await ids({ tags: ["odd"] })).toEqual([]);
    expect(await ids({ tags: ["odd", "x"], step: 3 })).toEqual([cid(3)]);
    expect(await ids({ step: null })).toEqual([]);
    // A filter without thread id goes through the GIN index across every thread.
    const everywhere = await collect(store.listCheckpoints({ filter: { step: 3, tags: ["odd", "x"] } }));
    expect(everywhere.filter((s) => s.record.threadId === t)).toHaveLength(1);
  });

  it("stores metadata with NUL, lone surrogates and 1 MB strings exactly, and finds it by filter", async () => {
    const t = threadId();
    const metadataJson = { "k\u0000ey": "v\u0000al", lone: "a\ud800b", big: "x".repeat(1024 * 1024), nested: { s: "\u0000" } };
    await store.putCheckpoint({ record: record(t, cid(0), { metadataJson }), blobs: [], chunks: [] });
    await store.putCheckpoint({ record: record(t, cid(1), { metadataJson: { "k\uFFFDey": "v\uFFFDal" } }), blobs: [], chunks: [] });
    const got = await store.getCheckpoint({ threadId: t, checkpointNs: "", checkpointId: cid(0) });
    expect(got?.record.metadataJson).toEqual(metadataJson);
    const found = await collect(store.listCheckpoints({ threadId: t, filter: { "k\u0000ey": "v\u0000al", nested: { s: "\u0000" } } }));
    // The sanitized twin (cid 1) may also come back; core's re-check drops it. The real one must be there.
    expect(found.map((s) => s.record.checkpointId)).toContain(cid(0));
    expect((await collect(store.listCheckpoints({ threadId: t, filter: { lone: "a\ud800b" } }))).map((s) => s.record.checkpointId)).toEqual([cid(0)]);
  });

  it("stores hostile ids literally and hostile filters as data", async () => {
    const hostile = [`'; DROP TABLE resumable_checkpoints; --`, `"quoted" $1 $$ $tag$ \\ ;`, "ünïcødé 😀", ""];
    for (const id of hostile) {
      const t = `${threadId()}${id}`;
      await store.putCheckpoint({ record: record(t, `${id}cp`, { checkpointNs: id, metadataJson: { [id]: id } }), blobs: [blob(`${id}ch`, `${id}1`)], chunks: [] });
      await store.putWrites({ threadId: t, checkpointNs: id, checkpointId: `${id}cp`, writes: [write(`${id}task`, 0, `${id}ch`, id, id)], chunks: [], mode: "ignore" });
      const got = await store.getCheckpoint({ threadId: t, checkpointNs: id });
      expect(got?.record.threadId).toBe(t);
      expect(got?.record.checkpointId).toBe(`${id}cp`);
      expect(got?.writes[0]?.taskId).toBe(`${id}task`);
      expect(got?.writes[0]?.taskPath).toBe(id);
      const listed = await collect(store.listCheckpoints({ threadId: t, filter: { [id]: id } }));
      expect(listed).toHaveLength(1);
      await store.deleteThread(t);
      expect(await store.getCheckpoint({ threadId: t, checkpointNs: id })).toBeUndefined();
    }
    expect(await collect(store.listCheckpoints({ filter: { "'); DROP TABLE x; --": "$1" } }))).toEqual([]);
  });

  it("refuses ids PostgreSQL cannot store exactly, with an error naming the field, and stores nothing", async () => {
    const t = threadId();
    const cases: Array<[string, () => Promise<unknown>]> = [
      ["thread_id", () => store.putCheckpoint({ record: record(`${t}\u0000`, cid(0)), blobs: [], chunks: [] })],
      ["thread_id", () => store.putCheckpoint({ record: record(`${t}\ud800`, cid(0)), blobs: [], chunks: [] })],
      ["thread_id", () => store.putCheckpoint({ record: record(`${t}${"x".repeat(1024 * 1024)}`, cid(0)), blobs: [], chunks: [] })],
      ["checkpoint_ns", () => store.getCheckpoint({ threadId: t, checkpointNs: "a\u0000b" })],
      ["task id", () => store.putWrites({ threadId: t, checkpointNs: "", checkpointId: cid(0), writes: [write("ta\u0000sk", 0, "c", 1)], chunks: [], mode: "ignore" })],
      ["thread_id", () => store.deleteThread("\u0000")],
    ];
    for (const [field, call] of cases) {
      const error = await call().then(() => undefined, (e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect((error as InvalidConfigError).field).toBe(field);
    }
    expect(await collect(store.listCheckpoints({ threadId: t }))).toEqual([]);
  });

  it("round-trips values with NUL bytes, lone surrogates and megabytes of data", async () => {
    const t = threadId();
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i % 251);
    const nul = { type: "json", data: new TextEncoder().encode('"\\u0000\u0000"') };
    await store.putCheckpoint({
      record: record(t, cid(0), { channelVersions: { big: "1", nul: "1", e: "1" } }),
      blobs: [blob("big", "1", { type: "bytes", data: big }), blob("nul", "1", nul), blob("e", "1", empty())],
      chunks: [],
    });
    const got = await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    const byChannel = new Map(got!.blobs.map((b) => [b.channel, b.value]));
    // Compared as one buffer: element-wise deep equality over megabytes takes vitest tens of seconds.
    expect(Buffer.compare(Buffer.from(byChannel.get("big")!.data), Buffer.from(big))).toBe(0);
    expect(byChannel.get("big")?.data.byteLength).toBe(big.byteLength);
    expect(byChannel.get("nul")).toEqual(nul);
    expect(byChannel.get("e")).toEqual(empty());
  });

  it("stores batches too large for PostgreSQL's 65535 parameters in one statement each", async () => {
    const t = threadId();
    const n = 9000;
    const channels = Array.from({ length: n }, (_, i) => `ch'${i}`);
    const data = (i: number) => new Uint8Array([0, i % 256, 92, 34, 39, 0]);
    const chunkRef = { hash: "abc", count: 1, size: 3 };
    await store.putCheckpoint({
      record: record(t, cid(0), { channelVersions: Object.fromEntries(channels.map((c) => [c, "1"])) }),
      blobs: channels.map((c, i) => blob(c, "1", i === 7 ? { type: "json", data: new Uint8Array(0), chunkRef } : { type: "bytes", data: data(i) })),
      chunks: Array.from({ length: n }, (_, i) => ({ hash: "big", index: i, data: data(i) })),
    });
    await store.putWrites({
      threadId: t,
      checkpointNs: "",
      checkpointId: cid(0),
      writes: channels.map((c, i) => ({ taskId: "fan-out", idx: i, channel: c, value: { type: "bytes", data: data(i) }, taskPath: `p"${i}` })),
      chunks: [],
      mode: "ignore",
    });
    const got = await store.getCheckpoint({ threadId: t, checkpointNs: "" });
    expect(got!.blobs).toHaveLength(n);
    expect(got!.writes).toHaveLength(n);
    const blob42 = got!.blobs.find((b) => b.channel === "ch'42")!;
    expect([...blob42.value.data]).toEqual([...data(42)]);
    expect(got!.blobs.find((b) => b.channel === "ch'7")!.value.chunkRef).toEqual(chunkRef);
    const write42 = got!.writes.find((w) => w.idx === 42)!;
    expect([write42.channel, write42.taskPath, [...write42.value.data]]).toEqual(["ch'42", 'p"42', [...data(42)]]);
    const chunks = await store.getChunks(t, ["big"]);
    expect(chunks).toHaveLength(n);
    expect([...chunks[300]!.data]).toEqual([...data(300)]);
  });

  it("returns a delta channel's ancestors back to its seed in one query, and stops there", async () => {
    const t = threadId();
    for (let i = 0; i < 30; i++) {
      const seed = i === 4 || i === 20;
      await store.putCheckpoint({
        record: record(t, cid(i), { parentCheckpointId: i === 0 ? undefined : cid(i - 1), channelVersions: { d: String(i + 1) } }),
        blobs: [blob("d", String(i + 1), seed ? json(`seed${i}`) : empty())],
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
  });

  it("fetches blobs by key and chunks by hash", async () => {
    const t = threadId();
    const chunks = [0, 1, 2].map((index) => ({ hash: "h1", index, data: new Uint8Array([index, 0, 255]) }));
    await store.putCheckpoint({ record: record(t, cid(0)), blobs: [blob("a", "1"), blob("a", "2")], chunks });
    await store.putCheckpoint({ record: record(t, cid(1)), blobs: [blob("a", "1", json("other"))], chunks: chunks.slice(0, 1) });
    expect((await store.getChunks(t, ["h1"])).map((c) => [c.index, [...c.data]])).toEqual([[0, [0, 0, 255]], [1, [1, 0, 255]], [2, [2, 0, 255]]]);
    const blobs = await store.getBlobs({ threadId: t, checkpointNs: "" }, [{ channel: "a", version: "2" }, { channel: "a", version: "1" }, { channel: "a", version: "9" }]);
    expect(blobs.map((b) => [b.version, decode(b.value)]).sort()).toEqual([["1", "a@1"], ["2", "a@2"]]);
  });

  it("deletes every row of one thread, in every namespace, and nothing of another", async () => {
    const [gone, kept] = [threadId("gone"), threadId("kept")];
    for (const t of [gone, kept]) {
      await chain(t, 2);
      await chain(t, 2, "sub");
      await store.putWrites({ threadId: t, checkpointNs: "sub", checkpointId: cid(1), writes: [write("x", 0, "a", 1)], chunks: [{ hash: "h", index: 0, data: new Uint8Array([1]) }], mode: "ignore" });
    }
    await store.deleteThread(gone);
    expect(await collect(store.listCheckpoints({ threadId: gone }))).toEqual([]);
    expect(await store.getChunks(gone, ["h"])).toEqual([]);
    expect(await store.getBlobs({ threadId: gone, checkpointNs: "" }, [{ channel: "a", version: "1" }])).toEqual([]);
    expect(await collect(store.listCheckpoints({ threadId: kept }))).toHaveLength(4);
    expect(await store.getChunks(kept, ["h"])).toHaveLength(1);
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
    expect(seen).toEqual(["INSERT checkpoint", "INSERT checkpoint", "SELECT checkpoint"]);
  });

  it("works in a schema whose name needs quoting, and says when setup() was not run", async () => {
    const odd = new PostgresStore(db.pool(), { schema: `we"ird; DROP SCHEMA public; --` });
    await expect(odd.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreNotSetUpError);
    await odd.setup();
    await odd.putCheckpoint({ record: record("t", cid(0)), blobs: [], chunks: [] });
    expect((await odd.getCheckpoint({ threadId: "t", checkpointNs: "" }))?.record.checkpointId).toBe(cid(0));
    expect(() => new PostgresStore(db.pool(), { schema: "x".repeat(64) })).toThrow(InvalidConfigError);
  });
});

describe("PostgresSaver", () => {
  it("checkpoints a LangGraph graph, splits values over chunkBytes into chunks, and resumes it", async () => {
    const State = Annotation.Root({ items: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const build = (checkpointer: PostgresSaver) =>
      new StateGraph(State)
        .addNode("one", () => ({ items: ["x".repeat(5000)] }))
        .addNode("two", () => ({ items: ["two"] }))
        .addEdge(START, "one")
        .addEdge("one", "two")
        .addEdge("two", END)
        .compile({ checkpointer });
    const saver = await PostgresSaver.connect(db.url, { chunkBytes: 1024 });
    try {
      const config = { configurable: { thread_id: threadId("graph") } };
      await build(saver).invoke({ items: ["start"] }, config);
      const again = await PostgresSaver.connect(db.url, { chunkBytes: 1024, setup: false });
      try {
        const state = await build(again).getState(config);
        expect(state.values.items).toEqual(["start", "x".repeat(5000), "two"]);
        const history = [];
        for await (const snapshot of build(again).getStateHistory(config)) history.push(snapshot);
        expect(history.length).toBe(4);
        const { rows } = await again.store.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM resumable_chunks");
        expect(rows[0]!.n).toBeGreaterThan(0);
      } finally {
        await again.close();
      }
    } finally {
      await saver.close();
    }
  });
});

describe("chunk rows", () => {
  /** Random bytes, so that PostgreSQL cannot compress them away. */
  const random = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(Math.random() * 256));
  const toastRows = async (mine: PostgresStore) => {
    const { rows } = await mine.pool.query<{ toast: string }>(
      `SELECT t.oid::regclass::text AS toast FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class t ON t.oid = c.reltoastrelid ` +
        `WHERE c.relname = 'resumable_chunks' AND n.nspname = $1`,
      [mine.schema],
    );
    return Number((await mine.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${rows[0]!.toast}`)).rows[0]!.n);
  };

  it("keep a 2 KB piece in the table's own pages, as equal parts under the TOAST threshold, and read it back exactly", async () => {
    const mine = new PostgresStore(db.pool(), { schema: "chunk_parts" });
    await mine.setup();
    const thread = threadId("parts");
    const pieces = [random(2100), random(700), random(5000)].map((data, i) => ({ hash: `p${i}`, index: 0, data }));
    await mine.putCheckpoint({ record: record(thread, cid(1)), blobs: [], chunks: pieces });
    const { rows } = await mine.pool.query<{ hash: string; part: number; n: number }>(
      `SELECT hash, part, length(data) AS n FROM "chunk_parts".resumable_chunks WHERE thread_id = $1 ORDER BY hash, part`,
      [thread],
    );
    expect(rows.map((r) => `${r.hash}:${r.part}:${r.n}`)).toEqual(["p0:1:1050", "p0:2:1050", "p1:0:700", "p2:1:1667", "p2:2:1667", "p2:3:1666"]);
    expect(await toastRows(mine)).toBe(0);
    const back = await mine.getChunks(thread, ["p0", "p1", "p2"]);
    expect(back.map((c) => [c.hash, c.index, Buffer.from(c.data).toString("hex")])).toEqual(pieces.map((c) => [c.hash, 0, Buffer.from(c.data).toString("hex")]));
  });

  it("read a chunk kept whole by an earlier release as it was, when the same chunk is sent again in parts", async () => {
    const mine = new PostgresStore(db.pool(), { schema: "chunk_whole" });
    await mine.setup();
    const thread = threadId("whole");
    const data = random(3000);
    // What schema version 4 wrote: the whole value in one row (part 0 after migration 5).
    await mine.pool.query(`INSERT INTO "chunk_whole".resumable_chunks (thread_id, hash, idx, data) VALUES ($1, 'w', 0, $2)`, [thread, Buffer.from(data)]);
    await mine.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [], chunks: [{ hash: "w", index: 0, data }], mode: "ignore" });
    const [chunk] = await mine.getChunks(thread, ["w"]);
    expect(Buffer.from(chunk!.data).equals(Buffer.from(data))).toBe(true);
  });
});

describe("schema", () => {
  it("indexes checkpoints by their primary key only (no metadata index to write at every put)", async () => {
    const mine = new PostgresStore(db.pool(), { schema: "index_check" });
    await mine.setup();
    const { rows } = await mine.pool.query<{ indexname: string }>(
      `SELECT indexname FROM pg_indexes WHERE schemaname = 'index_check' AND tablename = 'resumable_checkpoints' ORDER BY indexname`,
    );
    expect(rows.map((r) => r.indexname)).toEqual(["resumable_checkpoints_pkey"]);
  });
});
