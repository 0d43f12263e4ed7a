// Each contract category must fail when the rule it checks is broken. Every store below is the
// reference MemoryStore with one rule broken on purpose; the matching category must report "failed"
// (and memory.test.ts shows the same categories pass on the unbroken store).
import { MemorySaver } from "@langchain/langgraph-checkpoint";
import {
  MemoryStore,
  type CheckpointStore,
  type DeleteRecordsRequest,
  type LeaseClaim,
  type ListThreadsQuery,
  type PatchThreadStatusRequest,
  type HistoryQuery,
  type ListCheckpointsQuery,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type StoreCapabilities,
  type StoredCheckpoint,
} from "@resumable/core";
import { describe, expect, it } from "vitest";

import {
  badInput,
  copyThread,
  deleteThread,
  deltaHistory,
  durability,
  graphs,
  leases,
  listPaging,
  metadataFilter,
  parallelWrites,
  probeSubject,
  retention,
  runCategory,
  serialization,
  threadListing,
  threadStatus,
  toTarget,
  writeOrder,
  writeRules,
  type Category,
  type ConformanceFactory,
} from "../src/index.js";

/** A MemoryStore whose methods can be replaced one by one; `inner` is the untouched store. */
function brokenStore(
  override: (inner: MemoryStore) => Partial<CheckpointStore>,
  options: { maxItemBytes?: number; capabilities?: Partial<StoreCapabilities> } = {},
): ConformanceFactory {
  return () => {
    const inner = new MemoryStore({ maxItemBytes: options.maxItemBytes });
    const replaced = override(inner);
    const store: CheckpointStore = {
      capabilities: { ...inner.capabilities, ...options.capabilities },
      setup: () => inner.setup(),
      putCheckpoint: (r) => inner.putCheckpoint(r),
      putWrites: (r) => inner.putWrites(r),
      getCheckpoint: (s) => inner.getCheckpoint(s),
      listCheckpoints: (q) => inner.listCheckpoints(q),
      getHistory: (q) => inner.getHistory(q),
      getChunks: (t, h) => inner.getChunks(t, h),
      getBlobs: (s, k) => inner.getBlobs(s, k),
      deleteThread: (t) => inner.deleteThread(t),
      close: () => inner.close(),
      claimLease: (c) => inner.claimLease(c),
      renewLease: (l, ttl) => inner.renewLease(l, ttl),
      releaseLease: (l) => inner.releaseLease(l),
      getLease: (t) => inner.getLease(t),
      getThreadStatus: (t) => inner.getThreadStatus(t),
      listThreads: (q) => inner.listThreads(q),
      patchThreadStatus: (r) => inner.patchThreadStatus(r),
      listThreadRecords: (t) => inner.listThreadRecords(t),
      deleteRecords: (r) => inner.deleteRecords(r),
      ...replaced,
    };
    return store;
  };
}

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of iterable) out.push(x);
  return out;
}

/** Stores a checkpoint read back from a store again, with its blobs and writes. */
async function restore(store: MemoryStore, stored: StoredCheckpoint): Promise<void> {
  await store.putCheckpoint({ record: stored.record, blobs: stored.blobs, chunks: [] });
  const scope = { threadId: stored.record.threadId, checkpointNs: stored.record.checkpointNs, checkpointId: stored.record.checkpointId };
  if (stored.writes.length > 0) await store.putWrites({ ...scope, writes: stored.writes, chunks: [], mode: "upsert" });
}

/** Runs one category on the broken subject: it must fail, with a failed check matching `which`. */
async function expectFails(category: Category, factory: ConformanceFactory | (() => MemorySaver), which: RegExp): Promise<string[]> {
  const target = toTarget(factory);
  const result = await runCategory(target, await probeSubject(target), category);
  const failed = result.checks.filter((c) => c.status === "failed").map((c) => `${c.name}: ${c.error}`);
  expect(result.status, `category ${category.id} should fail on this broken store`).toBe("failed");
  expect(failed.some((f) => which.test(f)), `no failed check matches ${which}; failed: ${failed.join(" | ")}`).toBe(true);
  return failed;
}

describe("each category fails on a store that breaks its rule", () => {
  it("write-rules: putWrites ignores the upsert mode", async () => {
    const failed = await expectFails(writeRules, brokenStore((inner) => ({ putWrites: (r: PutWritesRequest) => inner.putWrites({ ...r, mode: "ignore" }) })), /INTERRUPT then RESUME/);
    expect(failed.join("\n")).toMatch(/INTERRUPT/);
  });

  it("write-rules: putWrites always upserts", async () => {
    await expectFails(writeRules, brokenStore((inner) => ({ putWrites: (r: PutWritesRequest) => inner.putWrites({ ...r, mode: "upsert" }) })), /retried task keeps its first writes/);
  });

  it("write-order: the store drops each write's taskPath", async () => {
    await expectFails(
      writeOrder,
      brokenStore((inner) => ({ putWrites: (r: PutWritesRequest) => inner.putWrites({ ...r, writes: r.writes.map((w) => ({ ...w, taskPath: "" })) }) })),
      /getTuple pendingWrites order/,
    );
  });

  it("parallel-writes: concurrent putWrites on one checkpoint lose updates", async () => {
    await expectFails(
      parallelWrites,
      brokenStore((inner) => {
        const busy = new Set<string>();
        return {
          // A read-modify-write without a lock: a call that overlaps another one is lost.
          async putWrites(r: PutWritesRequest) {
            const key = `${r.threadId}\0${r.checkpointNs}\0${r.checkpointId}`;
            if (busy.has(key)) return;
            busy.add(key);
            await new Promise((resolve) => setTimeout(resolve, 1));
            await inner.putWrites(r);
            busy.delete(key);
          },
        };
      }),
      /concurrent tasks/,
    );
  });

  it("retention: the store's listing leaves out blobs' delta bases, so prune removes chains kept checkpoints read", async () => {
    await expectFails(
      retention,
      brokenStore((inner) => ({
        async listThreadRecords(threadId: string) {
          const records = await inner.listThreadRecords(threadId);
          return { ...records, blobs: records.blobs.map(({ baseVersion: _base, ...blob }) => blob) };
        },
      })),
      /reads back exactly as before/,
    );
  });

  it("retention: deleteRecords leaves the pending writes of removed checkpoints behind", async () => {
    await expectFails(
      retention,
      brokenStore((inner) => ({
        async deleteRecords(request: DeleteRecordsRequest) {
          // Removes the records only: as if the writes were keyed apart and forgotten.
          const records = await inner.listThreadRecords(request.threadId);
          const writes = records.writes.filter((w) => request.checkpoints.some((c) => c.checkpointNs === w.checkpointNs && c.checkpointId === w.checkpointId));
          const kept = await Promise.all(
            [...new Set(writes.map((w) => `${w.checkpointNs}\u0000${w.checkpointId}`))].map(async (key) => {
              const [checkpointNs, checkpointId] = key.split("\u0000") as [string, string];
              const stored = await collect(inner.listCheckpoints({ threadId: request.threadId, checkpointNs, checkpointId }));
              return { checkpointNs, checkpointId, writes: stored[0]?.writes ?? [] };
            }),
          );
          await inner.deleteRecords(request);
          for (const { checkpointNs, checkpointId, writes: list } of kept) {
            if (list.length > 0) await inner.putWrites({ threadId: request.threadId, checkpointNs, checkpointId, writes: list, chunks: [], mode: "ignore" });
          }
        },
      })),
      /record counts and bytes|orphans/,
    );
  });

  it("copy-thread: listing a thread without a namespace yields only its root namespace", async () => {
    await expectFails(
      copyThread,
      brokenStore((inner) => ({
        listCheckpoints: (q: ListCheckpointsQuery) => inner.listCheckpoints(q.checkpointNs === undefined ? { ...q, checkpointNs: "" } : q),
      })),
      /every namespace/,
    );
  });

  it("delete-thread: only the root namespace is deleted", async () => {
    await expectFails(
      deleteThread,
      brokenStore((inner) => ({
        async deleteThread(threadId: string) {
          const nested = (await collect(inner.listCheckpoints({ threadId }))).filter((s) => s.record.checkpointNs !== "");
          await inner.deleteThread(threadId);
          for (const stored of nested) await restore(inner, stored);
        },
      })),
      /every namespace/,
    );
  });

  it("delete-thread: threads whose id starts with the deleted one go too", async () => {
    await expectFails(
      deleteThread,
      brokenStore((inner) => ({
        async deleteThread(threadId: string) {
          const ids = new Set((await collect(inner.listCheckpoints({}))).map((s) => s.record.threadId));
          for (const id of ids) if (id.startsWith(threadId)) await inner.deleteThread(id);
        },
      })),
      /extend the deleted one/,
    );
  });

  it("delete-thread: blobs outlive the thread", async () => {
    await expectFails(
      deleteThread,
      brokenStore((inner) => ({
        async deleteThread(threadId: string) {
          const all = await collect(inner.listCheckpoints({ threadId }));
          await inner.deleteThread(threadId);
          // Put the blobs back under a checkpoint nobody lists: what a store that forgets a table does.
          for (const s of all) await inner.putCheckpoint({ record: { ...s.record, threadId, checkpointNs: s.record.checkpointNs, checkpointId: "" }, blobs: s.blobs, chunks: [] });
        },
        async getCheckpoint(scope) {
          const found = await inner.getCheckpoint(scope);
          return found?.record.checkpointId === "" ? undefined : found;
        },
        async *listCheckpoints(q: ListCheckpointsQuery) {
          for await (const s of inner.listCheckpoints(q)) if (s.record.checkpointId !== "") yield s;
        },
      })),
      /re-created with the same ids/,
    );
  });

  it("list-paging: list yields oldest first", async () => {
    await expectFails(
      listPaging,
      brokenStore((inner) => ({
        async *listCheckpoints(q: ListCheckpointsQuery) {
          yield* (await collect(inner.listCheckpoints({ ...q, limit: undefined }))).reverse().slice(0, q.limit);
        },
      })),
      /not newest first/,
    );
  });

  it("list-paging: list ignores before", async () => {
    await expectFails(listPaging, brokenStore((inner) => ({ listCheckpoints: (q: ListCheckpointsQuery) => inner.listCheckpoints({ ...q, before: undefined }) })), /visit every checkpoint exactly once/);
  });

  it("list-paging: before is inclusive (off by one)", async () => {
    await expectFails(
      listPaging,
      brokenStore((inner) => ({
        async *listCheckpoints(q: ListCheckpointsQuery) {
          if (q.before === undefined) return yield* inner.listCheckpoints(q);
          const at = await inner.getCheckpoint({ threadId: q.threadId!, checkpointNs: q.checkpointNs ?? "", checkpointId: q.before });
          let left = q.limit;
          if (at) {
            yield at;
            if (left !== undefined) left -= 1;
          }
          if (left === 0) return;
          yield* inner.listCheckpoints({ ...q, limit: left });
        },
      })),
      /before: the 101st newest/,
    );
  });

  it("metadata-filter: a native filter that compares nested values by reference", async () => {
    await expectFails(
      metadataFilter,
      brokenStore(
        (inner) => ({
          async *listCheckpoints(q: ListCheckpointsQuery) {
            const { filter, limit, ...rest } = q;
            let left = limit;
            for await (const s of inner.listCheckpoints(rest)) {
              if (filter && !Object.entries(filter).every(([k, v]) => s.record.metadataJson[k] === v)) continue;
              if (left !== undefined && left-- <= 0) return;
              yield s;
            }
          },
        }),
        { capabilities: { nativeMetadataFilter: true } },
      ),
      /a nested object/,
    );
  });

  it("metadata-filter: a native filter that applies the limit before filtering", async () => {
    await expectFails(
      metadataFilter,
      brokenStore(
        (inner) => ({
          async *listCheckpoints(q: ListCheckpointsQuery) {
            const { filter, ...rest } = q;
            for await (const s of inner.listCheckpoints(rest)) {
              const text = (v: unknown) => JSON.stringify(v);
              if (!filter || Object.entries(filter).every(([k, v]) => text(s.record.metadataJson[k]) === text(v))) yield s;
            }
          },
        }),
        { capabilities: { nativeMetadataFilter: true } },
      ),
      /with a limit returns the newest matches/,
    );
  });

  it("serialization: the store loses chunks of large values", async () => {
    const dropChunks = <T extends { chunks: unknown[] }>(r: T): T => ({ ...r, chunks: r.chunks.slice(0, 1) });
    await expectFails(
      serialization,
      brokenStore(
        (inner) => ({
          putCheckpoint: (r: PutCheckpointRequest) => inner.putCheckpoint(dropChunks(r)),
          putWrites: (r: PutWritesRequest) => inner.putWrites(dropChunks(r)),
        }),
        { maxItemBytes: 256 * 1024 },
      ),
      /5 MB value/,
    );
  });

  it("serialization: the store keeps bytes as UTF-8 text", async () => {
    const asText = (data: Uint8Array) => new TextEncoder().encode(new TextDecoder().decode(data));
    await expectFails(
      serialization,
      brokenStore((inner) => ({
        putCheckpoint: (r: PutCheckpointRequest) =>
          inner.putCheckpoint({ ...r, blobs: r.blobs.map((b) => ({ ...b, value: { ...b.value, data: asText(b.value.data) } })) }),
      })),
      /channel "bytes"/,
    );
  });

  it("delta-history: getHistory drops the writes of the ancestor that holds the seed", async () => {
    await expectFails(
      deltaHistory,
      brokenStore((inner) => ({
        async getHistory(q: HistoryQuery) {
          const { ancestors } = await inner.getHistory(q);
          return { ancestors: ancestors.map((a) => (a.blobs.some((b) => b.value.type !== "empty") ? { ...a, writes: [] } : a)) };
        },
      })),
      /with the seed's writes/,
    );
  });

  it("bad-input: a saver that silently stores functions (LangChain's MemorySaver)", async () => {
    await expectFails(badInput, () => new MemorySaver(), /non-serializable channel value/);
  });

  it("graphs: putWrites resolves but keeps nothing of ordinary channels", async () => {
    const specialOnly = (r: PutWritesRequest) => ({ ...r, writes: r.writes.filter((w) => w.channel.startsWith("__")) });
    await expectFails(graphs, brokenStore((inner) => ({ putWrites: (r: PutWritesRequest) => inner.putWrites(specialOnly(r)) })), /parallel branch resumes/);
  });

  it("durability: putWrites resolves but keeps nothing of ordinary channels", async () => {
    const specialOnly = (r: PutWritesRequest) => ({ ...r, writes: r.writes.filter((w) => w.channel.startsWith("__")) });
    await expectFails(durability, brokenStore((inner) => ({ putWrites: (r: PutWritesRequest) => inner.putWrites(specialOnly(r)) })), /a failed branch resumes/);
  });

  it("leases: putCheckpoint ignores the fence", async () => {
    await expectFails(leases, brokenStore((inner) => ({ putCheckpoint: ({ fence: _fence, ...r }: PutCheckpointRequest) => inner.putCheckpoint(r) })), /refused on its next put/);
  });

  it("leases: putWrites ignores the fence", async () => {
    await expectFails(leases, brokenStore((inner) => ({ putWrites: ({ fence: _fence, ...r }: PutWritesRequest) => inner.putWrites(r) })), /refused on its next put and putWrites/);
  });

  it("leases: a stale put is refused, but only after its checkpoint was stored", async () => {
    await expectFails(
      leases,
      brokenStore((inner) => ({
        async putCheckpoint({ fence, ...r }: PutCheckpointRequest) {
          await inner.putCheckpoint(r);
          if (fence) await inner.putCheckpoint({ ...r, fence });
        },
      })),
      /nothing it tried to write is visible/,
    );
  });

  it("leases: a re-claim keeps the token", async () => {
    await expectFails(
      leases,
      brokenStore((inner) => {
        const tokens = new Map<string, number>();
        return {
          async claimLease(c: LeaseClaim) {
            const lease = await inner.claimLease(c);
            if (!lease) return undefined;
            // Hands out the thread's first token again: what a store that derives tokens from nothing stored does.
            if (!tokens.has(c.threadId)) tokens.set(c.threadId, lease.token);
            return { ...lease, token: tokens.get(c.threadId)! };
          },
        };
      }),
      /tokens increase/,
    );
  });

  it("leases: deleteThread starts the tokens over", async () => {
    await expectFails(
      leases,
      brokenStore((inner) => {
        const offsets = new Map<string, number>();
        return {
          async deleteThread(t: string) {
            await inner.deleteThread(t);
            offsets.set(t, ((await inner.getLease(t))?.token ?? 0) + (offsets.get(t) ?? 0));
          },
          async claimLease(c: LeaseClaim) {
            const lease = await inner.claimLease(c);
            return lease && { ...lease, token: lease.token - (offsets.get(c.threadId) ?? 0) };
          },
        };
      }),
      /across deleteThread/,
    );
  });

  it("leases: claims never exclude each other and writes are not fenced (two workers fork the thread)", async () => {
    let n = 0;
    const failed = await expectFails(
      leases,
      brokenStore((inner) => ({
        claimLease: (c: LeaseClaim) => inner.claimLease({ ...c, workerId: `${c.workerId}#${++n}`, ttlMs: 1 }).then((l) => l && { ...l, workerId: c.workerId }),
        putCheckpoint: ({ fence: _f, ...r }: PutCheckpointRequest) => inner.putCheckpoint(r),
        putWrites: ({ fence: _f, ...r }: PutWritesRequest) => inner.putWrites(r),
      })),
      /leave it unforked/,
    );
    expect(failed.join("\n")).toMatch(/more than one child|inputs in the final state/);
  });

  it("thread-status: putWrites drops the status of ERROR and INTERRUPT writes", async () => {
    await expectFails(threadStatus, brokenStore((inner) => ({ putWrites: ({ status: _s, ...r }: PutWritesRequest) => inner.putWrites(r) })), /failed with the error/);
  });

  it("thread-status: status patches ignore the checkpoint they name", async () => {
    await expectFails(
      threadStatus,
      brokenStore((inner) => ({
        async patchThreadStatus(r: PatchThreadStatusRequest) {
          const current = await inner.getThreadStatus(r.threadId);
          return current ? inner.patchThreadStatus({ ...r, patch: { ...r.patch, checkpointId: current.checkpointId } }) : undefined;
        },
      })),
      /apply only to the checkpoint they name/,
    );
  });

  it("thread-listing: listThreads ignores the cursor", async () => {
    await expectFails(threadListing, brokenStore((inner) => ({ listThreads: ({ after: _a, ...q }: ListThreadsQuery) => inner.listThreads(q) })), /pages of 7/);
  });

  it("thread-listing: listThreads ignores olderThan", async () => {
    await expectFails(threadListing, brokenStore((inner) => ({ listThreads: ({ olderThan: _o, ...q }: ListThreadsQuery) => inner.listThreads(q) })), /olderThan keeps only/);
  });

  it("thread-listing: listThreads returns the newest first", async () => {
    await expectFails(
      threadListing,
      brokenStore((inner) => ({
        async listThreads(q: ListThreadsQuery) {
          const all = await inner.listThreads({ ...q, after: undefined, limit: 100_000 });
          return all.reverse().slice(0, q.limit);
        },
      })),
      /oldest activity first/,
    );
  });
});
