import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

import { check, checkEqual, collect, makeCheckpoint, metadata, mustGet, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category, CheckContext } from "../types.js";

const NAMESPACES = ["", "child:1f0a", "child:1f0a|grandchild:2b"];

/** Fills one thread: two checkpoints with values and writes in each namespace. */
async function fillThread(saver: BaseCheckpointSaver, threadId: string, large: string): Promise<RunnableConfig[]> {
  const configs: RunnableConfig[] = [];
  for (const ns of NAMESPACES) {
    const c0 = await putCheckpoint(saver, threadConfig(threadId, ns), { a: `a of ${threadId}`, big: large });
    await saver.putWrites(c0, [["a", `write of ${threadId}`], ["big", large]], "task-1", "~__pregel_pull, n");
    // The runtime hands put() every channel value and names the changed ones in newVersions.
    const c1 = await putCheckpoint(saver, c0, { a: `a of ${threadId}`, big: large, b: `b of ${threadId}` }, { newVersions: { b: 1 } });
    await saver.putWrites(c1, [["b", "pending"]], "task-2");
    configs.push(c0, c1);
  }
  return configs;
}

/** A value that needs chunks when the store declares an item limit (and is small otherwise). */
function largeValue(ctx: CheckContext): string {
  const limit = ctx.info.capabilities.maxItemBytes;
  return Number.isFinite(limit) ? "x".repeat(Math.min(limit * 2 + 17, 8 * 1024 * 1024)) : "x".repeat(1024);
}

/**
 * `deleteThread` removes every checkpoint, blob, write and chunk of a thread, in every namespace,
 * and nothing of any other thread, even one whose id starts with the deleted one.
 */
export const deleteThread: Category = {
  id: "delete-thread",
  title: "deleteThread (every namespace of that thread only)",
  description:
    "deleteThread removes checkpoints, writes, blobs and chunks in every namespace of the thread, and leaves other threads (including ids that share a prefix) untouched.",
  checks: [
    {
      name: "removes every checkpoint and write of the thread in every namespace",
      async run(ctx) {
        const { saver } = await ctx.open();
        const doomed = ctx.threadId("doomed");
        const big = largeValue(ctx);
        const configs = await fillThread(saver, doomed, big);
        await saver.deleteThread(doomed);
        for (const config of configs) {
          const tuple = await saver.getTuple(config);
          check(tuple === undefined, `checkpoint ${show(config.configurable)} is still readable after deleteThread`);
        }
        for (const ns of NAMESPACES) {
          check((await saver.getTuple(threadConfig(doomed, ns))) === undefined, `the latest checkpoint of namespace "${ns}" survived deleteThread`);
        }
        const left = await collect(saver.list({ configurable: { thread_id: doomed } }));
        checkEqual(left.length, 0, "checkpoints listed for the deleted thread");
      },
    },
    {
      name: "leaves other threads whole, including ids that extend the deleted one",
      async run(ctx) {
        const { saver } = await ctx.open();
        const doomed = ctx.threadId("t");
        const neighbours = [`${doomed}0`, `${doomed}:x`, `${doomed}%`, `${doomed}*`, `x${doomed}`];
        const big = largeValue(ctx);
        await fillThread(saver, doomed, big);
        const kept = new Map<string, RunnableConfig[]>();
        for (const id of neighbours) kept.set(id, await fillThread(saver, id, big));
        await saver.deleteThread(doomed);
        for (const [id, configs] of kept) {
          for (const config of configs) {
            const tuple = await mustGet(saver, config, `thread "${id}" after deleting "${doomed}"`);
            check(tuple.checkpoint.channel_values.a === `a of ${id}`, `thread "${id}" lost channel "a" when "${doomed}" was deleted`);
            check(tuple.checkpoint.channel_values.big === big, `thread "${id}" lost its large channel when "${doomed}" was deleted`);
            check((tuple.pendingWrites ?? []).length > 0, `thread "${id}" lost its pending writes when "${doomed}" was deleted`);
          }
          const listed = await collect(saver.list({ configurable: { thread_id: id } }));
          checkEqual(listed.length, NAMESPACES.length * 2, `checkpoints listed for thread "${id}"`);
        }
      },
    },
    {
      name: "a thread re-created with the same ids sees none of the deleted writes or channel values",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const configs = await fillThread(saver, thread, largeValue(ctx));
        await saver.deleteThread(thread);
        for (let i = 0; i < configs.length; i += 2) {
          const old = await mustGetAfterReput(saver, configs[i]!);
          checkEqual(old.values, {}, `channel values of a re-created checkpoint in namespace "${old.ns}" (old blobs must be gone)`);
          checkEqual(old.writes, [], `pending writes of a re-created checkpoint in namespace "${old.ns}" (old writes must be gone)`);
        }
      },
    },
    {
      name: "no blob or chunk of the thread is left in the store",
      skipUnless: (info) =>
        info.kind === "store" ? undefined : "the factory returns a saver, not a CheckpointStore: blobs and chunks are not observable",
      async run(ctx) {
        const { saver, store } = await ctx.open();
        const thread = ctx.threadId();
        await fillThread(saver, thread, largeValue(ctx));
        const records = await collect(store!.listCheckpoints({ threadId: thread }));
        const hashes = new Set<string>();
        for (const r of records) {
          for (const v of [r.record.checkpoint, r.record.metadata, ...r.blobs.map((b) => b.value), ...r.writes.map((w) => w.value)]) {
            if (v.chunkRef) hashes.add(v.chunkRef.hash);
          }
        }
        await saver.deleteThread(thread);
        for (const ns of NAMESPACES) {
          const blobs = await store!.getBlobs({ threadId: thread, checkpointNs: ns }, [
            { channel: "a", version: "1" },
            { channel: "b", version: "1" },
            { channel: "big", version: "1" },
          ]);
          checkEqual(blobs.length, 0, `blobs left in namespace "${ns}" after deleteThread`);
        }
        for (const hash of hashes) {
          const chunks = await store!.getChunks(thread, [hash]);
          checkEqual(chunks.length, 0, `chunks of value ${hash.slice(0, 12)} left after deleteThread`);
        }
      },
    },
  ],
};

/** Puts a checkpoint again under the id of a deleted one, with its old versions but no new values. */
async function mustGetAfterReput(
  saver: BaseCheckpointSaver,
  config: RunnableConfig,
): Promise<{ ns: string; values: Record<string, unknown>; writes: unknown[] }> {
  const { thread_id, checkpoint_ns, checkpoint_id } = config.configurable as Record<string, string>;
  const base = { configurable: { thread_id, checkpoint_ns } };
  const checkpoint = { ...makeCheckpoint({}, { a: 1, big: 1 }), id: checkpoint_id! };
  const put = await saver.put(base, checkpoint, metadata(0), {});
  const tuple = await mustGet(saver, put, "a re-created checkpoint");
  return { ns: checkpoint_ns ?? "", values: tuple.checkpoint.channel_values, writes: tuple.pendingWrites ?? [] };
}
