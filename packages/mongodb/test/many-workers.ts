/**
 * manyWorkers beyond the conformance categories, on one FerretDB handler: off by default, what a
 * refused fenced write leaves (invisible records, and a retry of the same task that still lands),
 * claims racing on a released lease (FerretDB's conditional updates are not atomic; the register's
 * inserts are), requests per call, and deleteThread keeping the lease.
 */
import { InvalidConfigError, LeaseLostError } from "@resumable/core";
import type { FerretDbHandler } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { MongoDBStore } from "../src/index.js";
import { TestServer, blob, cid, record, threadId, write } from "./helpers.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const put = (thread: string, id: number) => ({
  record: record(thread, cid(id), { channelVersions: { a: String(id) } }),
  blobs: [blob("a", String(id))],
  chunks: [],
});

export function manyWorkersTests(handler: FerretDbHandler): void {
  const server = new TestServer(handler);
  beforeAll(() => server.init());
  afterAll(() => server.closeAll());
  const store = async (manyWorkers = true) => {
    const s = new MongoDBStore(server.client, { dbName: await server.database("mw"), manyWorkers });
    await s.setup();
    return s;
  };

  describe(`manyWorkers on FerretDB (${handler} handler)`, () => {
    it("is off by default: no lease or status capability, lease calls refused, a put sends what it sent before", async () => {
      const plain = await store(false);
      expect(plain.capabilities.leases).toBeUndefined();
      expect(plain.capabilities.threadStatus).toBeUndefined();
      const refused = await plain.claimLease({ threadId: threadId(), workerId: "w", ttlMs: 1000 }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(InvalidConfigError);
      const counter = server.countCommands();
      await plain.putCheckpoint(put(threadId("off"), 1));
      counter.stop();
      expect(counter.names().map((n) => n.split(" ")[0])).toEqual(["insert", "update"]);
    });

    it("a fenced put costs the commit and the untag (3 more requests: read the newest entry, insert the next, strip the old), a read nothing more", async () => {
      const s = await store();
      const thread = threadId("rt");
      const lease = (await s.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))!;
      await s.putCheckpoint({ ...put(thread, 1), fence: lease, status: { state: "pending", updatedAt: 1 } });
      const counter = server.countCommands();
      await s.putCheckpoint({ ...put(thread, 2), fence: lease, status: { state: "done", updatedAt: 2 } });
      const fencedPut = counter.names();
      counter.reset();
      await s.getCheckpoint({ threadId: thread, checkpointNs: "" });
      const read = counter.names();
      counter.stop();
      // insert blobs, upsert checkpoint, find newest entry's successor (this store knows the newest), insert entry, strip, untag.
      expect(fencedPut.map((n) => n.split(" ")[0])).toEqual(["insert", "update", "find", "insert", "update", "update"]);
      expect(read.some((n) => n.includes("leases"))).toBe(false);
      expect(await s.getThreadStatus(thread)).toMatchObject({ state: "done", checkpointId: cid(2), updatedAt: 2, attempts: 0 });
    });

    it("a refused fenced write throws LeaseLostError naming the new holder and stays invisible; the new holder's retry of the same task lands", async () => {
      const a = await store();
      const b = new MongoDBStore(server.client, { dbName: a.db.databaseName, manyWorkers: true });
      const thread = threadId("refused");
      const leaseA = (await a.claimLease({ threadId: thread, workerId: "a", ttlMs: 50 }))!;
      await a.putCheckpoint({ ...put(thread, 1), fence: leaseA });
      await sleep(120);
      const leaseB = (await b.claimLease({ threadId: thread, workerId: "b", ttlMs: 60_000 }))!;
      expect(leaseB.token).toBe(leaseA.token + 1);
      const refused = await a.putCheckpoint({ ...put(thread, 2), fence: leaseA }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LeaseLostError);
      expect(refused).toMatchObject({ token: leaseA.token, currentToken: leaseB.token, holder: "b" });
      const writes = { threadId: thread, checkpointNs: "", checkpointId: cid(1), chunks: [], mode: "ignore" as const };
      expect(await a.putWrites({ ...writes, writes: [write("task", 0, "a", "stale")], fence: leaseA }).catch((e: unknown) => e)).toBeInstanceOf(LeaseLostError);
      // The refused records are stored, tagged, and no read returns them.
      expect(await a.collections.checkpoints.countDocuments({ thread_id: thread })).toBe(2);
      const latest = await b.getCheckpoint({ threadId: thread, checkpointNs: "" });
      expect(latest?.record.checkpointId).toBe(cid(1));
      expect(latest?.writes).toEqual([]);
      expect((await b.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(2) }))).toBeUndefined();
      // "ignore" keeps the first write of a key, but the refused one was never visible: the retry replaces it.
      await b.putWrites({ ...writes, writes: [write("task", 0, "a", "fresh")], fence: leaseB });
      const after = await b.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(1) });
      expect(after?.writes.map((w) => [w.taskId, w.channel])).toEqual([["task", "a"]]);
      expect(Buffer.from(after!.writes[0]!.value.data).toString()).toContain("fresh");
      // A committed write stays first.
      await b.putWrites({ ...writes, writes: [write("task", 0, "a", "third")], fence: leaseB });
      const again = await b.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(1) });
      expect(Buffer.from(again!.writes[0]!.value.data).toString()).toContain("fresh");
    });

    it("of claims racing on a released or expired lease, from 6 clients at once, exactly one wins, 10 rounds", async () => {
      const first = await store();
      const stores = [first, ...Array.from({ length: 5 }, () => new MongoDBStore(server.client, { dbName: first.db.databaseName, manyWorkers: true }))];
      const thread = threadId("race");
      let lease = (await first.claimLease({ threadId: thread, workerId: "w0", ttlMs: 60_000 }))!;
      for (let round = 1; round <= 10; round += 1) {
        if (round % 2 === 0) await first.releaseLease(lease);
        else {
          lease = (await stores[0]!.renewLease(lease, 1))!;
          await sleep(5);
        }
        const won = (await Promise.all(stores.map((s, i) => s.claimLease({ threadId: thread, workerId: `r${round}-${i}`, ttlMs: 60_000 })))).filter((l) => l !== undefined);
        expect(won.length, `round ${round}`).toBe(1);
        expect(won[0]!.token).toBe(lease.token + 1);
        expect((await first.getLease(thread))?.workerId).toBe(won[0]!.workerId);
        lease = won[0]!;
      }
    });

    it("deleteThread removes the status but keeps the lease, so tokens keep growing and the old holder stays fenced", async () => {
      const s = await store();
      const thread = threadId("delete");
      const lease = (await s.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))!;
      await s.putCheckpoint({ ...put(thread, 1), fence: lease, status: { state: "pending", updatedAt: 5 } });
      expect((await s.listThreads({ states: ["pending"], limit: 1000 })).map((r) => r.threadId)).toContain(thread);
      await s.deleteThread(thread);
      expect(await s.getThreadStatus(thread)).toBeUndefined();
      expect((await s.listThreads({ states: ["pending"], limit: 1000 })).map((r) => r.threadId)).not.toContain(thread);
      expect(await s.getLease(thread)).toMatchObject({ token: lease.token, workerId: "w", released: false });
      expect((await s.claimLease({ threadId: thread, workerId: "w", ttlMs: 60_000 }))?.token).toBe(lease.token + 1);
      expect(await s.putCheckpoint({ ...put(thread, 2), fence: lease }).catch((e: unknown) => e)).toBeInstanceOf(LeaseLostError);
    });
  });
}
