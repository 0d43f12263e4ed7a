// Retention on the MongoDB store, below what the conformance category sees: the documents of each
// collection counted before and after a prune, the queries it sends (an equality on thread_id per
// collection, then one deleteMany per collection, checkpoints first), the lease register left as it
// was, what a refused fenced put left (not listed, then removed), a refused fenced prune, and an
// expired thread listing nothing.
import { InvalidConfigError, LeaseLostError, ResumableSaver, type ChunkRecord, type Lease } from "@resumable/core";
import type { CommandStartedEvent, Document } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { MongoDBStore } from "../src/index.js";
import { HANDLERS, TestServer, blob, cid, json, record, threadId, write } from "./helpers.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(HANDLERS)("retention on FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  beforeAll(() => server.init());
  afterAll(() => server.closeAll());

  const open = async (options: { manyWorkers?: boolean; ttlSeconds?: number; dbName?: string } = {}) => {
    const store = new MongoDBStore(server.client, { dbName: options.dbName ?? (await server.database("ret")), ...options });
    await store.setup();
    return store;
  };

  /** Checkpoint i: blob "a" at version i (and "b" at 1 from the first), a write whose value references piece h<i>. */
  async function step(store: MongoDBStore, thread: string, i: number, fence?: Lease): Promise<void> {
    await store.putCheckpoint({
      record: record(thread, cid(i), { parentCheckpointId: i === 0 ? undefined : cid(i - 1), channelVersions: { a: String(i), b: "1" } }),
      blobs: i === 0 ? [blob("a", "0"), blob("b", "1")] : [blob("a", String(i))],
      chunks: [],
      ...(fence ? { fence } : {}),
    });
    const piece: ChunkRecord = { hash: `h${i}`, index: 0, data: new Uint8Array(300).fill(i) };
    await store.putWrites({
      threadId: thread,
      checkpointNs: "",
      checkpointId: cid(i),
      writes: [{ ...write("task", 0, "a", `w${i}`), value: { ...json(`w${i}`), refs: [piece.hash] } }],
      chunks: [piece],
      mode: "ignore",
      ...(fence ? { fence } : {}),
    });
  }

  /** How many documents of the thread each collection holds, counted in the collections themselves. */
  async function documents(store: MongoDBStore, thread: string): Promise<Record<string, number>> {
    const { checkpoints, blobs, writes, chunks } = store.collections;
    const where = { thread_id: thread };
    return {
      checkpoints: await checkpoints.countDocuments(where),
      blobs: await blobs.countDocuments(where),
      writes: await writes.countDocuments(where),
      chunks: await chunks.countDocuments(where),
    };
  }

  const register = (store: MongoDBStore, thread: string) => store.collections.leases.find({ thread_id: thread }, { sort: { seq: 1 } }).toArray();

  /** The commands the client sends meanwhile: name, collection and filter(s). */
  function watch(): { commands: () => Array<{ name: string; collection: string; filter: Document | undefined }>; stop: () => void } {
    const seen: Array<{ name: string; collection: string; filter: Document | undefined }> = [];
    const listener = (event: CommandStartedEvent) => {
      const command = event.command;
      const collection = String(command[event.commandName]);
      const filter = event.commandName === "delete" ? (command.deletes as Array<{ q: Document }>)[0]?.q : (command.filter as Document | undefined);
      seen.push({ name: event.commandName, collection: collection.replace(/^resumable_/, ""), filter });
    };
    server.client.on("commandStarted", listener);
    return { commands: () => [...seen], stop: () => void server.client.off("commandStarted", listener) };
  }

  it("a fenced prune lists each collection with one equality on thread_id, removes with one deleteMany per collection in order (checkpoints, writes, blobs, chunks), and leaves the register and other threads as they were", async () => {
    const store = await open({ manyWorkers: true });
    const saver = new ResumableSaver(store);
    const [thread, other] = [threadId("pruned"), threadId("other")];
    const lease = (await saver.claimLease(thread, { workerId: "w", ttlMs: 60_000 }))!;
    for (let i = 0; i < 5; i += 1) {
      await step(store, thread, i, lease);
      await step(store, other, i);
    }
    const before = { thread: await documents(store, thread), other: await documents(store, other), register: await register(store, thread) };
    expect(before.thread).toEqual({ checkpoints: 5, blobs: 6, writes: 5, chunks: 5 });
    expect(before.register.length).toBeGreaterThan(5);

    const watcher = watch();
    const result = await saver.withLease(lease).prune([thread], { keepLast: 2 });
    watcher.stop();

    // Checkpoints 3 and 4 stay, with their writes, their pieces, blob a at 3 and 4 and b at 1 (carried over).
    expect(await documents(store, thread)).toEqual({ checkpoints: 2, blobs: 3, writes: 2, chunks: 2 });
    expect(result).toMatchObject({ checkpoints: 3, writes: 3, blobs: 3, chunks: 3 });
    expect((await store.collections.blobs.find({ thread_id: thread }).toArray()).map((b) => `${b.channel}@${b.version}`).sort()).toEqual(["a@3", "a@4", "b@1"]);
    expect(await documents(store, other)).toEqual(before.other);
    expect(await register(store, thread)).toEqual(before.register);

    const commands = watcher.commands();
    const listing = commands.filter((c) => c.name === "find" && c.collection !== "leases");
    expect(listing.map((c) => c.collection).sort()).toEqual(["blobs", "checkpoints", "chunks", "writes"]);
    for (const c of listing) expect(c.filter).toEqual({ thread_id: thread });
    const removals = commands.filter((c) => c.name === "delete");
    expect(removals.map((c) => c.collection)).toEqual(["checkpoints", "writes", "blobs", "chunks"]);
    for (const c of removals) expect(c.filter?.["thread_id"]).toBe(thread);
    // The fence: one read of the register, before the first removal; no other request.
    const fence = commands.findIndex((c) => c.collection === "leases");
    expect(commands[fence]?.name).toBe("find");
    expect(fence).toBeLessThan(commands.indexOf(removals[0]!));
    expect(commands.filter((c) => c.collection === "leases")).toHaveLength(1);
    expect(commands).toHaveLength(4 + 1 + 4);
  });

  it("the listing does not grow in queries with the thread: 4 finds for 3 checkpoints and for 30", async () => {
    const store = await open();
    const finds: number[] = [];
    for (const length of [3, 30]) {
      const thread = threadId(`len${length}`);
      for (let i = 0; i < length; i += 1) await step(store, thread, i);
      const watcher = watch();
      const records = await store.listThreadRecords(thread);
      watcher.stop();
      expect(records.checkpoints).toHaveLength(length);
      expect(records.writes).toHaveLength(length);
      expect(records.chunks).toHaveLength(length);
      finds.push(watcher.commands().length);
    }
    expect(finds).toEqual([4, 4]);
  });

  it("a refused fenced put is invisible garbage: not listed as a checkpoint, and removed with its parts by the next prune; a prune through the lost lease is refused and removes nothing", async () => {
    const a = await open({ manyWorkers: true });
    const b = await open({ manyWorkers: true, dbName: a.db.databaseName });
    const [saverA, saverB] = [new ResumableSaver(a), new ResumableSaver(b)];
    const thread = threadId("garbage");
    const leaseA = (await saverA.claimLease(thread, { workerId: "a", ttlMs: 50 }))!;
    await step(a, thread, 0, leaseA);
    await sleep(120);
    const leaseB = (await saverB.claimLease(thread, { workerId: "b", ttlMs: 60_000 }))!;
    // A, its lease lost, puts checkpoint 1 and a write on checkpoint 0: both refused, both stored tagged.
    expect(await step(a, thread, 1, leaseA).catch((e: unknown) => e)).toBeInstanceOf(LeaseLostError);
    expect(
      await a
        .putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(0), writes: [write("late", 0, "a", "stale")], chunks: [], mode: "ignore", fence: leaseA })
        .catch((e: unknown) => e),
    ).toBeInstanceOf(LeaseLostError);
    for (let i = 2; i < 5; i += 1) await step(b, thread, i, leaseB);
    expect(await documents(b, thread)).toEqual({ checkpoints: 5, blobs: 6, writes: 5, chunks: 4 });

    const listed = await b.listThreadRecords(thread);
    expect(listed.checkpoints.map((r) => r.checkpointId).sort()).toEqual([cid(0), cid(2), cid(3), cid(4)]);
    expect(listed.blobs.map((x) => `${x.channel}@${x.version}`).sort()).toEqual(["a@0", "a@1", "a@2", "a@3", "a@4", "b@1"]);
    expect(listed.writes.map((w) => `${w.checkpointId}/${w.taskId}`).sort()).toEqual([`${cid(0)}/late`, `${cid(0)}/task`, `${cid(2)}/task`, `${cid(3)}/task`, `${cid(4)}/task`]);

    const registerBefore = await register(b, thread);
    const refused = await saverA.withLease(leaseA).prune([thread], { keepLast: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    expect(await documents(b, thread)).toEqual({ checkpoints: 5, blobs: 6, writes: 5, chunks: 4 });
    expect(await register(b, thread)).toEqual(registerBefore);

    await saverB.withLease(leaseB).prune([thread], { keepLast: 1 });
    expect(await documents(b, thread)).toEqual({ checkpoints: 1, blobs: 2, writes: 1, chunks: 1 });
    expect((await b.collections.checkpoints.find({ thread_id: thread }).toArray()).map((d) => d.checkpoint_id)).toEqual([cid(4)]);
    expect(await register(b, thread)).toEqual(registerBefore);
    expect((await b.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.record.checkpointId).toBe(cid(4));
  });

  it("a kept write keeps the pieces of both its values: the one readers see and one a fenced call left pending beside it", async () => {
    const a = await open({ manyWorkers: true });
    const b = await open({ manyWorkers: true, dbName: a.db.databaseName });
    const thread = threadId("pending");
    const leaseA = (await a.claimLease({ threadId: thread, workerId: "a", ttlMs: 50 }))!;
    await step(a, thread, 0, leaseA);
    await step(a, thread, 1, leaseA);
    await sleep(120);
    const leaseB = (await b.claimLease({ threadId: thread, workerId: "b", ttlMs: 60_000 }))!;
    // A, its lease lost, replaces checkpoint 1's write with a value referencing piece p: refused, left under `next`.
    const piece: ChunkRecord = { hash: "p", index: 0, data: new Uint8Array(200).fill(9) };
    const replaced = { ...write("task", 0, "a", "replaced"), value: { ...json("replaced"), refs: [piece.hash] } };
    const refused = await a
      .putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes: [replaced], chunks: [piece], mode: "upsert", fence: leaseA })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LeaseLostError);
    const listed = (await b.listThreadRecords(thread)).writes.find((w) => w.checkpointId === cid(1));
    expect(listed).toMatchObject({ taskId: "task", channel: "a", bytes: json("w1").data.byteLength });
    await new ResumableSaver(b).withLease(leaseB).prune([thread], { keepLast: 1 });
    expect((await b.collections.chunks.find({ thread_id: thread }).toArray()).map((c) => c.hash).sort()).toEqual(["h1", "p"]);
    expect((await b.getCheckpoint({ threadId: thread, checkpointNs: "" }))?.writes.map((w) => w.value.refs)).toEqual([["h1"]]);
  });

  it("a removal whose status could not be stored is refused with InvalidConfigError before anything is removed", async () => {
    const store = await open({ manyWorkers: true });
    const thread = threadId("badstatus");
    for (let i = 0; i < 3; i += 1) await step(store, thread, i);
    const before = await documents(store, thread);
    const removal = { threadId: thread, checkpoints: [{ checkpointNs: "", checkpointId: cid(0) }], blobs: [{ checkpointNs: "", channel: "a", version: "0" }], chunks: ["h0"] };
    for (const write of [{ state: "done" as const, updatedAt: -1 }, { state: "finished" as never, updatedAt: 1 }]) {
      const error = await store.deleteRecords({ ...removal, status: { checkpointId: cid(2), write } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidConfigError);
      expect(await documents(store, thread)).toEqual(before);
    }
    await store.deleteRecords({ ...removal, status: { checkpointId: cid(2), write: { state: "done", updatedAt: 7 } } });
    expect(await documents(store, thread)).toEqual({ checkpoints: 2, blobs: 3, writes: 2, chunks: 2 });
    expect(await store.getThreadStatus(thread)).toMatchObject({ state: "done", checkpointId: cid(2), updatedAt: 7, attempts: 0 });
  });

  it("an expired thread (ttlSeconds) lists nothing, so a prune removes nothing of it", async () => {
    const store = await open({ ttlSeconds: 3600 });
    const thread = threadId("expired");
    for (let i = 0; i < 3; i += 1) await step(store, thread, i);
    expect((await store.listThreadRecords(thread)).checkpoints).toHaveLength(3);
    await store.collections.threads.updateOne({ _id: thread }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    expect(await store.listThreadRecords(thread)).toEqual({ checkpoints: [], blobs: [], writes: [], chunks: [] });
    expect((await new ResumableSaver(store).prune([thread], { keepLast: 1 })).checkpoints).toBe(0);
    expect(await documents(store, thread)).toEqual({ checkpoints: 3, blobs: 4, writes: 3, chunks: 3 });
  });
});
