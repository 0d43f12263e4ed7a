import { join } from "node:path";

import Database from "better-sqlite3";
import { ID_LIMITS, InvalidConfigError, StoreClosedError, StoreNotSetUpError, type CheckpointRecord } from "@resumable/core";
import { afterAll, describe, expect, it } from "vitest";

import { SCHEMA_VERSION, SqliteStore, type SqliteDatabase, type SqliteStatement } from "../src/index.js";
import { blob, cid, collect, commands, decode, empty, freshStore, json, record, removeTempDirs, tempDir, text, write } from "./helpers.js";

afterAll(removeTempDirs);

describe("setup and schema", () => {
  it("refuses to work before setup() with an actionable StoreNotSetUpError", async () => {
    const store = new SqliteStore(join(tempDir(), "fresh.db"));
    const error = await store.getCheckpoint({ threadId: "t", checkpointNs: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toMatch(/not set up.*setup\(\)/s);
    await expect(store.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: [] })).rejects.toBeInstanceOf(StoreNotSetUpError);
    await store.close();
  });

  it("reports a table dropped after setup as not set up", async () => {
    const { store } = await freshStore();
    const db = (await store.database()) as unknown as Database.Database;
    db.exec("DROP TABLE resumable_writes");
    // One statement reads a checkpoint with its writes, so a missing table shows even on an empty thread.
    await expect(store.getCheckpoint({ threadId: "none", checkpointNs: "" })).rejects.toBeInstanceOf(StoreNotSetUpError);
    await store.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: [] });
    const error = await store.getCheckpoint({ threadId: "t", checkpointNs: "" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toContain("resumable_writes");
    await store.close();
  });

  it("is idempotent: setup() twice, and from a second store on the same file, applies each migration once", async () => {
    const { store, path } = await freshStore();
    await store.setup();
    await store.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: [] });
    const other = new SqliteStore(path);
    await other.setup();
    expect((await other.getCheckpoint({ threadId: "t", checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
    const db = new Database(path);
    expect(db.prepare("SELECT version FROM resumable_migrations").all()).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })));
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
    db.close();
    await Promise.all([store.close(), other.close()]);
  });

  it("refuses a schema written by a newer version of the package", async () => {
    const { store, path } = await freshStore();
    await store.close();
    const db = new Database(path);
    db.prepare("INSERT INTO resumable_migrations (version, applied_at) VALUES (?, ?)").run(SCHEMA_VERSION + 1, "later");
    db.close();
    const newer = new SqliteStore(path);
    await expect(newer.setup()).rejects.toThrow(/newer @resumable\/sqlite/);
    await expect(newer.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreNotSetUpError);
    await newer.close();
  });

  it("declares its capabilities; an in-memory database is not persistent", async () => {
    const { store } = await freshStore();
    expect(store.capabilities).toMatchObject({ nativeMetadataFilter: true, persistent: true, commandEvents: true });
    const memory = new SqliteStore(":memory:");
    expect(memory.capabilities.persistent).toBe(false);
    await memory.setup();
    await memory.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: [] });
    expect((await memory.getCheckpoint({ threadId: "t", checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
    await Promise.all([store.close(), memory.close()]);
  });

  it("rejects invalid options with typed errors", () => {
    expect(() => new SqliteStore(":memory:", { synchronous: "OFF" as "FULL" })).toThrow(InvalidConfigError);
    expect(() => new SqliteStore(":memory:", { busyTimeoutMs: -1 })).toThrow(InvalidConfigError);
  });

  it("applies the synchronous choice to the connection", async () => {
    const { store } = await freshStore({ synchronous: "NORMAL" });
    const db = (await store.database()) as unknown as Database.Database;
    expect(db.pragma("synchronous", { simple: true })).toBe(1);
    const full = await freshStore();
    expect(((await full.store.database()) as unknown as Database.Database).pragma("synchronous", { simple: true })).toBe(2);
    await Promise.all([store.close(), full.store.close()]);
  });
});

describe("open and close", () => {
  it("closes a database it opened, and refuses use after close()", async () => {
    const { store } = await freshStore();
    const db = await store.database();
    await store.close();
    expect(db.open).toBe(false);
    await expect(store.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toBeInstanceOf(StoreClosedError);
  });

  it("leaves a Database handed in open", async () => {
    const db = new Database(join(tempDir(), "given.db"));
    const store = new SqliteStore(db);
    await store.setup();
    await store.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: [] });
    await store.close();
    expect(db.open).toBe(true);
    expect(db.prepare("SELECT count(*) AS n FROM resumable_checkpoints").get()).toEqual({ n: 1 });
    db.close();
  });
});

/** A connection over `db` whose statements are what `statement` makes of better-sqlite3's own. */
function wrappedConnection(db: Database.Database, statement: (sql: string, native: Database.Statement) => SqliteStatement): SqliteDatabase {
  return {
    prepare: (sql: string) => statement(sql, db.prepare(sql)),
    pragma: (source, options) => db.pragma(source, options),
    close: () => db.close(),
    get open() {
      return db.open;
    },
    get inTransaction() {
      return db.inTransaction;
    },
    get memory() {
      return db.memory;
    },
    get name() {
      return db.name;
    },
  };
}

describe("a connection without raw mode", () => {
  it("reads a checkpoint with its blobs and writes the same as better-sqlite3's own statements do", async () => {
    const path = join(tempDir(), "plain.db");
    const native = new SqliteStore(path);
    await native.setup();
    const threadId = "plain";
    await native.putCheckpoint({ record: record(threadId, cid(1), { channelVersions: { a: "1", b: "1" } }), blobs: [blob("a", "1"), { ...blob("b", "1"), baseVersion: "0" }], chunks: [] });
    await native.putWrites({ threadId, checkpointNs: "", checkpointId: cid(1), writes: [write("task", 0, "a", "w"), write("task", 1, "b", "x")], chunks: [], mode: "ignore" });
    const db = new Database(path);
    // What a wrapper around a connection may offer: the statement methods the interface requires, no `raw`.
    const plain = wrappedConnection(db, (_sql, statement) => ({
      run: (...params: unknown[]) => statement.run(...params),
      get: (...params: unknown[]) => statement.get(...params),
      all: (...params: unknown[]) => statement.all(...params),
    }));
    const wrapped = new SqliteStore(plain);
    await wrapped.setup();
    const expected = await native.getCheckpoint({ threadId, checkpointNs: "" });
    expect(expected?.writes).toHaveLength(2);
    expect(expected?.blobs.find((b) => b.channel === "b")?.baseVersion).toBe("0");
    expect(await wrapped.getCheckpoint({ threadId, checkpointNs: "" })).toEqual(expected);
    await wrapped.close();
    await native.close();
    db.close();
  });
});

describe("chunk parts in whatever order SQLite returns them", () => {
  it("joins each chunk's parts in order though the rows come back reversed", async () => {
    const path = join(tempDir(), "order.db");
    const native = new SqliteStore(path);
    await native.setup();
    // 2100 bytes: stored as three parts. Distinct bytes per position, so a misplaced part shows.
    const large = (seed: number) => Uint8Array.from({ length: 2100 }, (_, i) => (i * 7 + seed) % 251);
    for (const [seed, threadId] of ["one", "two"].entries()) {
      const value = { ...json([0, 0]), refs: [`piece-${threadId}`, "shared"] };
      await native.putCheckpoint({
        record: record(threadId, cid(1), { channelVersions: { a: "1" } }),
        blobs: [blob("a", "1", value)],
        chunks: [
          { hash: `piece-${threadId}`, index: 0, data: large(seed) },
          { hash: "shared", index: 0, data: large(5) },
          { hash: "shared", index: 1, data: text("second") },
        ],
      });
    }
    const db = new Database(path);
    // A connection whose chunk reads return their rows last to first, as another query plan might.
    const reversing = wrappedConnection(db, (sql, statement) => {
      const reverse = sql.includes("resumable_chunks AS c") ? (rows: unknown[]) => rows.reverse() : (rows: unknown[]) => rows;
      return {
        run: (...params: unknown[]) => statement.run(...params),
        get: (...params: unknown[]) => statement.get(...params),
        all: (...params: unknown[]) => reverse(statement.all(...params)),
        raw(toggle?: boolean) {
          statement.raw(toggle);
          return this;
        },
      };
    });
    const reversed = new SqliteStore(reversing);
    await reversed.setup();
    const one = await native.getCheckpoint({ threadId: "one", checkpointNs: "" });
    expect(one?.chunks?.find((c) => c.hash === "piece-one")?.data).toEqual(large(0));
    expect(await reversed.getCheckpoint({ threadId: "one", checkpointNs: "" })).toEqual(one);
    expect(await reversed.getChunks("two", ["shared", "piece-two"])).toEqual(await native.getChunks("two", ["shared", "piece-two"]));
    // Across threads: the statement by [thread, hash] pairs.
    const all = await collect(native.listCheckpoints({}));
    expect(all.map((c) => c.chunks?.length)).toEqual([3, 3]);
    expect(await collect(reversed.listCheckpoints({}))).toEqual(all);
    await reversed.close();
    await native.close();
    db.close();
  });
});

describe("putCheckpoint and getCheckpoint", () => {
  it("returns the latest checkpoint by id (as strings) with the blobs of its versions and its writes", async () => {
    const { store } = await freshStore();
    const threadId = "latest";
    await store.putCheckpoint({ record: record(threadId, cid(2), { channelVersions: { a: "2", b: "1" } }), blobs: [blob("a", "2"), blob("b", "1")], chunks: [] });
    await store.putCheckpoint({
      record: record(threadId, cid(10), { parentCheckpointId: cid(2), channelVersions: { a: "3", b: "1" } }),
      blobs: [blob("a", "3")],
      chunks: [],
    });
    await store.putWrites({ threadId, checkpointNs: "", checkpointId: cid(10), writes: [write("task", 0, "a", "w")], chunks: [], mode: "ignore" });
    const latest = await store.getCheckpoint({ threadId, checkpointNs: "" });
    expect(latest?.record).toMatchObject({ checkpointId: cid(10), parentCheckpointId: cid(2), channelVersions: { a: "3", b: "1" } });
    expect(latest?.blobs.map((b) => [b.channel, b.version, decode(b.value)]).sort()).toEqual([
      ["a", "3", "a@3"],
      ["b", "1", "b@1"],
    ]);
    expect(latest?.writes).toEqual([write("task", 0, "a", "w")]);
    const older = await store.getCheckpoint({ threadId, checkpointNs: "", checkpointId: cid(2) });
    expect(older?.record.parentCheckpointId).toBeUndefined();
    expect(older?.writes).toEqual([]);
    expect(await store.getCheckpoint({ threadId, checkpointNs: "", checkpointId: "missing" })).toBeUndefined();
    expect(await store.getCheckpoint({ threadId, checkpointNs: "other" })).toBeUndefined();
    await store.close();
  });

  it("round-trips every field: values as plain Uint8Array, empty values, chunk refs, base versions, metadata JSON", async () => {
    const { store } = await freshStore();
    const ref = { hash: "ab".repeat(32), count: 2, size: 5 };
    const rec: CheckpointRecord = record("fields", cid(1), {
      checkpointNs: "sub:1",
      checkpoint: { type: "bytes", data: new Uint8Array([0, 1, 255]) },
      metadata: { type: "json", data: new Uint8Array(0), chunkRef: ref },
      metadataJson: { nested: { b: [1, null, "x"], a: true }, step: 3 },
      channelVersions: { a: "1", e: "2" },
    });
    const chunks = [
      { hash: ref.hash, index: 1, data: text("lo") },
      { hash: ref.hash, index: 0, data: text("hel") },
    ];
    await store.putCheckpoint({ record: rec, blobs: [{ ...blob("a", "1"), baseVersion: "0" }, blob("e", "2", empty())], chunks });
    const got = await store.getCheckpoint({ threadId: "fields", checkpointNs: "sub:1" });
    expect(got?.record).toEqual(rec);
    expect(Object.getPrototypeOf(got!.record.checkpoint.data)).toBe(Uint8Array.prototype);
    expect(got?.blobs.find((b) => b.channel === "a")?.baseVersion).toBe("0");
    expect(got?.blobs.find((b) => b.channel === "e")?.value).toEqual(empty());
    expect(await store.getChunks("fields", [ref.hash])).toEqual([
      { hash: ref.hash, index: 0, data: text("hel") },
      { hash: ref.hash, index: 1, data: text("lo") },
    ]);
    expect(await store.getChunks("other-thread", [ref.hash])).toEqual([]);
    expect(await store.getBlobs({ threadId: "fields", checkpointNs: "sub:1" }, [{ channel: "a", version: "1" }, { channel: "a", version: "9" }])).toEqual([
      { ...blob("a", "1"), baseVersion: "0" },
    ]);
    await store.close();
  });

  it("keeps the first blob of a (channel, version) and the last checkpoint record of an id", async () => {
    const { store } = await freshStore();
    await store.putCheckpoint({ record: record("t", cid(1), { channelVersions: { a: "1" } }), blobs: [blob("a", "1", json("first"))], chunks: [] });
    await store.putCheckpoint({
      record: record("t", cid(1), { channelVersions: { a: "1" }, metadataJson: { second: true } }),
      blobs: [blob("a", "1", json("second"))],
      chunks: [],
    });
    const got = await store.getCheckpoint({ threadId: "t", checkpointNs: "" });
    expect(got?.record.metadataJson).toEqual({ second: true });
    expect(decode(got!.blobs[0]!.value)).toBe("first");
    await store.close();
  });

  it("is atomic: a transaction that fails part-way leaves no checkpoint, blob or chunk", async () => {
    const { store } = await freshStore();
    const hash = "cd".repeat(32);
    let seen = 0;
    store.instrument(({ command }) => {
      if (command === "INSERT blob" && ++seen === 2) throw new Error("injected failure");
    });
    await expect(
      store.putCheckpoint({
        record: record("atomic", cid(1), { channelVersions: { a: "1", b: "1" } }),
        blobs: [blob("a", "1"), blob("b", "1")],
        chunks: [{ hash, index: 0, data: text("x") }],
      }),
    ).rejects.toThrow("injected failure");
    store.instrument(undefined);
    expect(await store.getCheckpoint({ threadId: "atomic", checkpointNs: "" })).toBeUndefined();
    expect(await store.getBlobs({ threadId: "atomic", checkpointNs: "" }, [{ channel: "a", version: "1" }])).toEqual([]);
    expect(await store.getChunks("atomic", [hash])).toEqual([]);
    // The connection is usable afterwards: the transaction was rolled back, not left open.
    await store.putCheckpoint({ record: record("atomic", cid(1)), blobs: [], chunks: [] });
    expect((await store.getCheckpoint({ threadId: "atomic", checkpointNs: "" }))?.record.checkpointId).toBe(cid(1));
    await store.close();
  });

  it("reports every statement, transaction control included, as its own command", async () => {
    const { store } = await freshStore();
    const put = await commands(store, () =>
      store.putCheckpoint({
        record: record("cmd", cid(1), { channelVersions: { a: "1" } }),
        blobs: [blob("a", "1")],
        chunks: [{ hash: "h", index: 0, data: text("x") }],
      }),
    );
    expect(put).toEqual(["BEGIN IMMEDIATE", "INSERT chunk", "INSERT blob", "UPSERT checkpoint", "COMMIT"]);
    const writes = await commands(store, () =>
      store.putWrites({ threadId: "cmd", checkpointNs: "", checkpointId: cid(1), writes: [write("t", 0, "a", 1), write("t", 1, "a", 2)], chunks: [], mode: "ignore" }),
    );
    expect(writes).toEqual(["BEGIN IMMEDIATE", "INSERT write", "INSERT write", "COMMIT"]);
    const get = await commands(store, () => store.getCheckpoint({ threadId: "cmd", checkpointNs: "" }));
    // A read of a checkpoint is one statement (two when its values reference chunks), no transaction.
    expect(get).toEqual(["SELECT checkpoint"]);
    const blobWithPiece = { ...blob("p", "1"), value: { type: "json", data: text("[\u0000]"), refs: ["h"] } };
    await store.putCheckpoint({ record: record("cmd", cid(2), { channelVersions: { p: "1" } }), blobs: [blobWithPiece], chunks: [{ hash: "h", index: 0, data: text("1") }] });
    expect(await commands(store, () => store.getCheckpoint({ threadId: "cmd", checkpointNs: "" }))).toEqual(["SELECT checkpoint", "SELECT chunks"]);
    await store.close();
  });

  it("reads a thread deleted between a checkpoint and its chunks as gone, never torn", async () => {
    const { store, path } = await freshStore();
    const piece = { ...blob("p", "1"), value: { type: "json", data: text("[\u0000]"), refs: ["h"] } };
    await store.putCheckpoint({ record: record("race", cid(1), { channelVersions: { p: "1" } }), blobs: [piece], chunks: [{ hash: "h", index: 0, data: text("1") }] });
    const other = new SqliteStore(path);
    await other.setup();
    const seen: string[] = [];
    let deleted = false;
    store.instrument(({ command }) => {
      seen.push(command);
      if (command === "SELECT checkpoint" && !deleted) {
        deleted = true;
        // Another connection deletes the thread after the checkpoint's row was read, before its chunks.
        const db = new Database(path);
        db.exec("DELETE FROM resumable_checkpoints WHERE thread_id = 'race'; DELETE FROM resumable_blobs WHERE thread_id = 'race'; DELETE FROM resumable_chunks WHERE thread_id = 'race'");
        db.close();
      }
    });
    expect(await store.getCheckpoint({ threadId: "race", checkpointNs: "" })).toBeUndefined();
    store.instrument(undefined);
    expect(seen).toEqual(["SELECT checkpoint", "SELECT chunks", "BEGIN", "SELECT checkpoint", "COMMIT"]);
    await Promise.all([store.close(), other.close()]);
  });
});

describe("putWrites", () => {
  it('"ignore" keeps the first write of a (task, idx); "upsert" replaces it', async () => {
    const { store } = await freshStore();
    const scope = { threadId: "w", checkpointNs: "", checkpointId: cid(1) };
    await store.putCheckpoint({ record: record("w", cid(1)), blobs: [], chunks: [] });
    await store.putWrites({ ...scope, writes: [write("task", 0, "a", "first"), write("task", -3, "__interrupt__", "ask")], chunks: [], mode: "ignore" });
    await store.putWrites({ ...scope, writes: [write("task", 0, "a", "retry"), write("task", 1, "a", "new")], chunks: [], mode: "ignore" });
    let got = await store.getCheckpoint({ threadId: "w", checkpointNs: "" });
    const byKey = () => Object.fromEntries(got!.writes.map((w) => [`${w.taskId}/${w.idx}`, decode(w.value)]));
    expect(byKey()).toEqual({ "task/0": "first", "task/1": "new", "task/-3": "ask" });
    await store.putWrites({ ...scope, writes: [write("task", -3, "__interrupt__", "answered")], chunks: [], mode: "upsert" });
    got = await store.getCheckpoint({ threadId: "w", checkpointNs: "" });
    expect(byKey()).toEqual({ "task/0": "first", "task/1": "new", "task/-3": "answered" });
    await store.close();
  });

  it("keeps task paths and writes of other tasks and checkpoints apart", async () => {
    const { store } = await freshStore();
    await store.putCheckpoint({ record: record("w2", cid(1)), blobs: [], chunks: [] });
    await store.putCheckpoint({ record: record("w2", cid(2), { parentCheckpointId: cid(1) }), blobs: [], chunks: [] });
    await store.putWrites({ threadId: "w2", checkpointNs: "", checkpointId: cid(1), writes: [write("a", 0, "x", 1, "~__pregel_pull, a")], chunks: [], mode: "ignore" });
    await store.putWrites({ threadId: "w2", checkpointNs: "", checkpointId: cid(2), writes: [write("b", 0, "x", 2, "~__pregel_pull, b")], chunks: [], mode: "ignore" });
    const got = await store.getCheckpoint({ threadId: "w2", checkpointNs: "", checkpointId: cid(1) });
    expect(got?.writes).toEqual([write("a", 0, "x", 1, "~__pregel_pull, a")]);
    await store.close();
  });
});

describe("listCheckpoints", () => {
  it("pages newest first through 520 checkpoints without gaps or repeats, and honours before and limit", async () => {
    const { store } = await freshStore({ synchronous: "NORMAL" });
    const threadId = "many";
    for (let i = 0; i < 520; i += 1) {
      await store.putCheckpoint({
        record: record(threadId, cid(i), { parentCheckpointId: i > 0 ? cid(i - 1) : undefined, channelVersions: { a: String(i) } }),
        blobs: [blob("a", String(i))],
        chunks: [],
      });
    }
    await store.putWrites({ threadId, checkpointNs: "", checkpointId: cid(250), writes: [write("t", 0, "a", "w250")], chunks: [], mode: "ignore" });
    const all = await collect(store.listCheckpoints({ threadId, checkpointNs: "" }));
    expect(all.map((s) => s.record.checkpointId)).toEqual(Array.from({ length: 520 }, (_, i) => cid(519 - i)));
    expect(all.every((s) => s.blobs.length === 1 && s.blobs[0]!.version === s.record.channelVersions.a)).toBe(true);
    expect(all.find((s) => s.record.checkpointId === cid(250))?.writes.map((w) => decode(w.value))).toEqual(["w250"]);

    const limited = await collect(store.listCheckpoints({ threadId, checkpointNs: "", before: cid(300), limit: 150 }));
    expect(limited.map((s) => s.record.checkpointId)).toEqual(Array.from({ length: 150 }, (_, i) => cid(299 - i)));

    // Paging with `before` from the last id seen, as a user pages through history.
    const seen: string[] = [];
    let before: string | undefined;
    for (;;) {
      const page = await collect(store.listCheckpoints({ threadId, checkpointNs: "", before, limit: 37 }));
      if (page.length === 0) break;
      seen.push(...page.map((s) => s.record.checkpointId));
      before = page[page.length - 1]!.record.checkpointId;
    }
    expect(seen).toEqual(all.map((s) => s.record.checkpointId));
    await store.close();
  });

  it("never loads more than a page: a small limit costs one page query, the whole thread one per 100", async () => {
    const { store } = await freshStore({ synchronous: "NORMAL" });
    for (let i = 0; i < 250; i += 1) await store.putCheckpoint({ record: record("paged", cid(i)), blobs: [], chunks: [] });
    const pages = (cmds: string[]) => cmds.filter((c) => c === "SELECT checkpoints page").length;
    let first: string[] = [];
    expect(pages(await commands(store, async () => (first = (await collect(store.listCheckpoints({ threadId: "paged", limit: 3 }))).map((s) => s.record.checkpointId))))).toBe(1);
    expect(first).toEqual([cid(249), cid(248), cid(247)]);
    expect(pages(await commands(store, () => collect(store.listCheckpoints({ threadId: "paged" }))))).toBe(3);
    // An abandoned iteration stops issuing queries.
    expect(
      pages(
        await commands(store, async () => {
          for await (const _ of store.listCheckpoints({ threadId: "paged" })) break;
        }),
      ),
    ).toBe(1);
    await store.close();
  });

  it("orders across threads and namespaces stably (thread, namespace, newest first) and pages across them", async () => {
    const { store, path } = await freshStore();
    const small = new SqliteStore(path, { pageSize: 3 });
    const expected: string[] = [];
    for (const threadId of ["t-a", "t-b"]) {
      for (const ns of ["", "child:1"]) {
        for (let i = 0; i < 4; i += 1) await store.putCheckpoint({ record: record(threadId, cid(i), { checkpointNs: ns }), blobs: [], chunks: [] });
        for (let i = 3; i >= 0; i -= 1) expected.push(`${threadId}|${ns}|${cid(i)}`);
      }
    }
    const key = (s: { record: CheckpointRecord }) => `${s.record.threadId}|${s.record.checkpointNs}|${s.record.checkpointId}`;
    expect((await collect(small.listCheckpoints({}))).map(key)).toEqual(expected);
    expect((await collect(small.listCheckpoints({ threadId: "t-b" }))).map(key)).toEqual(expected.slice(8));
    expect((await collect(small.listCheckpoints({ checkpointNs: "child:1" }))).map(key)).toEqual([...expected.slice(4, 8), ...expected.slice(12)]);
    expect((await collect(small.listCheckpoints({ checkpointId: cid(2) }))).map(key)).toEqual(expected.filter((k) => k.endsWith(cid(2))));
    expect((await collect(small.listCheckpoints({ before: cid(1), limit: 3 }))).map(key)).toEqual(["t-a||cp-000000", "t-a|child:1|cp-000000", "t-b||cp-000000"]);
    await Promise.all([store.close(), small.close()]);
  });
});

describe("metadata filters", () => {
  const metadata: Array<Record<string, unknown>> = [
    { source: "input", step: -1, user: { name: "Zoë 😀", tags: ["a", "b"] } },
    { source: "loop", step: 0, 'quote"key': "it's \"quoted\"", "dot.key": { "$": 1 }, flag: true, none: null },
    { source: "loop", step: 1, "dot.key": { "$": 2 }, flag: false, count: "1", nul: "a\u0000b" },
  ];

  async function seeded() {
    const { store } = await freshStore();
    for (let i = 0; i < metadata.length; i += 1) {
      await store.putCheckpoint({ record: record("filter", cid(i), { metadataJson: metadata[i]! }), blobs: [], chunks: [] });
    }
    const ids = async (filter: Record<string, unknown>) =>
      (await collect(store.listCheckpoints({ threadId: "filter", filter }))).map((s) => Number(s.record.checkpointId.slice(3)));
    return { store, ids };
  }

  it("matches every key by deep equality, including nested values and unicode", async () => {
    const { store, ids } = await seeded();
    expect(await ids({ source: "loop" })).toEqual([2, 1]);
    expect(await ids({ source: "loop", step: 1 })).toEqual([2]);
    expect(await ids({ user: { tags: ["a", "b"], name: "Zoë 😀" } })).toEqual([0]);
    expect(await ids({ user: { name: "Zoë 😀" } })).toEqual([]);
    expect(await ids({ user: { name: "Zoë 😀", tags: ["b", "a"] } })).toEqual([]);
    expect(await ids({ source: "loop", step: 7 })).toEqual([]);
    expect(await ids({ missing: "x" })).toEqual([]);
    await store.close();
  });

  it("treats keys and values with quotes, dots, $ and NUL as data", async () => {
    const { store, ids } = await seeded();
    expect(await ids({ 'quote"key': "it's \"quoted\"" })).toEqual([1]);
    expect(await ids({ "dot.key": { "$": 2 } })).toEqual([2]);
    expect(await ids({ "dot.key": 2 })).toEqual([]);
    expect(await ids({ nul: "a\u0000b" })).toEqual([2]);
    expect(await ids({ nul: "a" })).toEqual([]);
    expect(await ids({ "source' OR 1=1 --": "x" })).toEqual([]);
    expect(await ids({ source: "x' OR '1'='1" })).toEqual([]);
    await store.close();
  });

  it("compares JSON types strictly: booleans, null, numbers and strings never match each other", async () => {
    const { store, ids } = await seeded();
    expect(await ids({ flag: true })).toEqual([1]);
    expect(await ids({ flag: false })).toEqual([2]);
    expect(await ids({ flag: 1 })).toEqual([]);
    expect(await ids({ none: null })).toEqual([1]);
    expect(await ids({ count: "1" })).toEqual([2]);
    expect(await ids({ count: 1 })).toEqual([]);
    expect(await ids({ step: -1 })).toEqual([0]);
    expect(await ids({ step: "0" })).toEqual([]);
    // JSON drops undefined: such a key matches records that do not have it, as core's own check does.
    expect(await ids({ flag: undefined })).toEqual([0]);
    await store.close();
  });
});

describe("getHistory", () => {
  /** A chain of `depth` checkpoints; channel "m" has a value only at `seedAt`, "n" only at the root. */
  async function chain(depth: number, seedAt: number) {
    const { store } = await freshStore({ synchronous: "NORMAL" });
    const threadId = `history-${depth}`;
    for (let i = 0; i < depth; i += 1) {
      const versions = { m: String(i), n: String(i), other: String(i) };
      await store.putCheckpoint({
        record: record(threadId, cid(i), { parentCheckpointId: i > 0 ? cid(i - 1) : undefined, channelVersions: versions }),
        blobs: [blob("m", String(i), i === seedAt ? json(`seed-${i}`) : empty()), blob("n", String(i), i === 0 ? json("root") : empty()), blob("other", String(i))],
        chunks: [],
      });
      await store.putWrites({
        threadId,
        checkpointNs: "",
        checkpointId: cid(i),
        writes: [write("task", 0, "m", `m${i}`), write("task", 1, "other", `o${i}`)],
        chunks: [],
        mode: "ignore",
      });
    }
    return { store, threadId };
  }

  it("returns the ancestors from the target's parent back to the nearest seed, with their writes on the requested channels", async () => {
    const { store, threadId } = await chain(12, 8);
    const { ancestors } = await store.getHistory({ threadId, checkpointNs: "", checkpointId: cid(11), channels: ["m"] });
    expect(ancestors.map((a) => a.checkpointId)).toEqual([cid(10), cid(9), cid(8)]);
    expect(ancestors.map((a) => a.writes.map((w) => decode(w.value)))).toEqual([["m10"], ["m9"], ["m8"]]);
    const seed = ancestors[2]!.blobs.find((b) => b.value.type !== "empty");
    expect(seed && decode(seed.value)).toBe("seed-8");
    expect(ancestors[0]!.parentCheckpointId).toBe(cid(9));
    // Each channel stops at its own seed: "n" is only seeded at the root.
    const both = await store.getHistory({ threadId, checkpointNs: "", checkpointId: cid(11), channels: ["m", "n"] });
    expect(both.ancestors.map((a) => a.checkpointId)).toEqual(Array.from({ length: 11 }, (_, i) => cid(10 - i)));
    // Past m's seed, only n's writes and blobs are returned.
    expect(both.ancestors[5]!.writes).toEqual([]);
    expect(both.ancestors[10]!.blobs.map((b) => b.channel)).toEqual(["n"]);
    expect((await store.getHistory({ threadId, checkpointNs: "", checkpointId: cid(0), channels: ["m"] })).ancestors).toEqual([]);
    expect((await store.getHistory({ threadId, checkpointNs: "", checkpointId: "unknown", channels: ["m"] })).ancestors).toEqual([]);
    await store.close();
  });

  it("uses the same number of statements whatever the depth", async () => {
    const shallow = await chain(5, 0);
    const deep = await chain(300, 0);
    const count = async ({ store, threadId }: { store: SqliteStore; threadId: string }, id: string) =>
      commands(store, () => store.getHistory({ threadId, checkpointNs: "", checkpointId: id, channels: ["m", "n"] }));
    const few = await count(shallow, cid(4));
    const many = await count(deep, cid(299));
    expect(many).toEqual(few);
    expect(many.length).toBeLessThanOrEqual(5);
    const result = await deep.store.getHistory({ threadId: deep.threadId, checkpointNs: "", checkpointId: cid(299), channels: ["m"] });
    expect(result.ancestors).toHaveLength(299);
    await Promise.all([shallow.store.close(), deep.store.close()]);
  });
});

describe("deleteThread", () => {
  it("removes checkpoints, blobs, writes and chunks of every namespace of that thread only", async () => {
    const { store } = await freshStore();
    for (const threadId of ["doomed", "kept"]) {
      for (const ns of ["", "child:1"]) {
        await store.putCheckpoint({
          record: record(threadId, cid(1), { checkpointNs: ns, channelVersions: { a: "1" } }),
          blobs: [blob("a", "1")],
          chunks: [{ hash: "h", index: 0, data: text(threadId) }],
        });
        await store.putWrites({ threadId, checkpointNs: ns, checkpointId: cid(1), writes: [write("t", 0, "a", 1)], chunks: [], mode: "ignore" });
      }
    }
    await store.deleteThread("doomed");
    for (const ns of ["", "child:1"]) {
      expect(await store.getCheckpoint({ threadId: "doomed", checkpointNs: ns })).toBeUndefined();
      expect(await store.getBlobs({ threadId: "doomed", checkpointNs: ns }, [{ channel: "a", version: "1" }])).toEqual([]);
      const kept = await store.getCheckpoint({ threadId: "kept", checkpointNs: ns });
      expect(kept?.blobs).toHaveLength(1);
      expect(kept?.writes).toHaveLength(1);
    }
    expect(await store.getChunks("doomed", ["h"])).toEqual([]);
    expect(await store.getChunks("kept", ["h"])).toHaveLength(1);
    const db = (await store.database()) as unknown as Database.Database;
    expect(db.prepare("SELECT count(*) AS n FROM resumable_writes WHERE thread_id = 'doomed'").get()).toEqual({ n: 0 });
    await store.close();
  });
});

describe("hostile ids", () => {
  // The longest id usable in every field at once is the shortest limit (checkpoint and task ids).
  const ids = ["it's", 'a"b', "x'; DROP TABLE resumable_checkpoints; --", "Zoë 😀 日本", "%_*?[]", "a".repeat(ID_LIMITS.checkpointIdBytes)];

  it.each(ids.map((id) => [id.length > 60 ? `a string of ${id.length} characters` : JSON.stringify(id), id]))(
    "round-trips %s as thread, namespace, checkpoint, task and channel",
    async (_label, id) => {
      const { store } = await freshStore();
      await store.putCheckpoint({ record: record(id, id, { checkpointNs: id, channelVersions: { [id]: "1" } }), blobs: [blob(id, "1")], chunks: [] });
      await store.putWrites({ threadId: id, checkpointNs: id, checkpointId: id, writes: [write(id, 0, id, "v", id)], chunks: [], mode: "ignore" });
      const got = await store.getCheckpoint({ threadId: id, checkpointNs: id });
      expect(got?.record.threadId === id && got.record.checkpointId === id && got.record.checkpointNs === id).toBe(true);
      expect(got?.blobs.map((b) => b.channel === id)).toEqual([true]);
      expect(got?.writes.map((w) => w.taskId === id && w.channel === id && w.taskPath === id)).toEqual([true]);
      expect((await collect(store.listCheckpoints({ threadId: id }))).length).toBe(1);
      expect(await store.getCheckpoint({ threadId: id.slice(0, -1) || "other", checkpointNs: id })).toBeUndefined();
      await store.deleteThread(id);
      expect(await store.getCheckpoint({ threadId: id, checkpointNs: id })).toBeUndefined();
      const db = (await store.database()) as unknown as Database.Database;
      expect(db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'resumable_checkpoints'").get()).toEqual({ n: 1 });
      await store.close();
    },
  );

  it("refuses ids that break the shared id rule (NUL, over the limit) before writing anything", async () => {
    const { store } = await freshStore();
    await expect(store.putCheckpoint({ record: record("nul\u0000byte", cid(1)), blobs: [], chunks: [] })).rejects.toThrow(/NUL/);
    await expect(store.putCheckpoint({ record: record("a".repeat(1024 * 1024), cid(1)), blobs: [], chunks: [] })).rejects.toThrow(/over the limit of 512 bytes/);
    const db = (await store.database()) as unknown as Database.Database;
    expect(db.prepare("SELECT count(*) AS n FROM resumable_checkpoints").get()).toEqual({ n: 0 });
    await store.close();
  });

  it("refuses ids SQLite cannot store as text (lone surrogates) instead of altering them", async () => {
    const { store } = await freshStore();
    await expect(store.putCheckpoint({ record: record("bad\uD800", cid(1)), blobs: [], chunks: [] })).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(store.getCheckpoint({ threadId: "\uDC00", checkpointNs: "" })).rejects.toThrow(/lone UTF-16 surrogate/);
    await store.close();
  });
});

describe("chunk rows", () => {
  const random = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7919 + n) % 251);
  const parts = (db: Database.Database, thread: string) =>
    (db.prepare(`SELECT hash, part, length(data) AS n FROM resumable_chunks WHERE thread_id = ? ORDER BY hash, part`).all(thread) as Array<{ hash: string; part: number; n: number }>).map(
      (r) => `${r.hash}:${r.part}:${r.n}`,
    );

  it("split a chunk into equal parts of at most 700 bytes, five to a 4 KB page, and read it back exactly", async () => {
    const { store } = await freshStore();
    const pieces = [random(2071), random(700), random(701), random(0)].map((data, i) => ({ hash: `p${i}`, index: 0, data }));
    await store.putCheckpoint({ record: record("t", cid(1)), blobs: [], chunks: pieces });
    const db = (await store.database()) as unknown as Database.Database;
    expect(parts(db, "t")).toEqual(["p0:0:691", "p0:1:691", "p0:2:689", "p1:0:700", "p2:0:351", "p2:1:350", "p3:0:0"]);
    const back = await store.getChunks("t", ["p0", "p1", "p2", "p3"]);
    expect(back.map((c) => [c.hash, Buffer.from(c.data).toString("hex")])).toEqual(pieces.map((c) => [c.hash, Buffer.from(c.data).toString("hex")]));
    await store.close();
  });

  it("leave a chunk stored in 1200-byte parts by an earlier release as it is when it is sent again", async () => {
    const { store } = await freshStore();
    const db = (await store.database()) as unknown as Database.Database;
    const data = random(3000);
    const insert = db.prepare(`INSERT INTO resumable_chunks (thread_id, hash, idx, part, data) VALUES ('t', 'old', 0, ?, ?)`);
    [0, 1, 2].forEach((part) => insert.run(part, data.subarray(part * 1200, (part + 1) * 1200)));
    await store.putWrites({ threadId: "t", checkpointNs: "", checkpointId: cid(1), writes: [], chunks: [{ hash: "old", index: 0, data }], mode: "ignore" });
    expect(parts(db, "t")).toEqual(["old:0:1200", "old:1:1200", "old:2:600"]);
    const [chunk] = await store.getChunks("t", ["old"]);
    expect(Buffer.from(chunk!.data).equals(Buffer.from(data))).toBe(true);
    await store.close();
  });
});
