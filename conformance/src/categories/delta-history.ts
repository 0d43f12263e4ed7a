import type { RunnableConfig } from "@langchain/core/runnables";
import { DeltaSnapshot, isDeltaSnapshot, type BaseCheckpointSaver, type ChannelVersions } from "@langchain/langgraph-checkpoint";
import type { CheckpointStore } from "@resumable/core";

import { check, checkEqual, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

/**
 * Builds a chain the way `DeltaChannel` does: every step bumps each listed channel's version, and only
 * snapshot steps store a value (`seeds`), the rest store nothing for that version.
 */
class Chain {
  private step = 0;
  private versions: ChannelVersions = {};
  constructor(
    private readonly saver: BaseCheckpointSaver,
    public config: RunnableConfig,
  ) {}

  async put(channels: string[], seeds: Record<string, unknown> = {}, parent: RunnableConfig = this.config): Promise<RunnableConfig> {
    this.step += 1;
    const newVersions: ChannelVersions = {};
    for (const ch of channels) newVersions[ch] = this.step;
    this.versions = { ...this.versions, ...newVersions };
    this.config = await putCheckpoint(this.saver, parent, seeds, { versions: { ...this.versions }, newVersions });
    return this.config;
  }
}

const valuesOf = (h: { writes: Array<[string, string, unknown]> } | undefined) => (h?.writes ?? []).map((w) => w[2]);

/** `getDeltaChannelHistory`: the ancestor walk that rebuilds a `DeltaChannel` from its writes. */
export const deltaHistory: Category = {
  id: "delta-history",
  title: "getDeltaChannelHistory",
  description:
    "Writes oldest first back to the nearest seed (the seed ancestor's writes included, the target's own excluded), each channel stopping at its own seed; no seed at the root; plain values as seeds; only on-path ancestors.",
  checks: [
    {
      name: "returns writes oldest first from the nearest seed, with the seed's writes and without the target's",
      async run(ctx) {
        const { saver } = await ctx.open();
        const chain = new Chain(saver, threadConfig(ctx.threadId()));
        const c0 = await chain.put(["m"], { m: new DeltaSnapshot(["s0"]) });
        await saver.putWrites(c0, [["m", ["w0"]]], "t0");
        const c1 = await chain.put(["m"]);
        await saver.putWrites(c1, [["m", ["w1"]]], "t1");
        const c2 = await chain.put(["m"], { m: new DeltaSnapshot(["s0", "w0", "w1"]) });
        await saver.putWrites(c2, [["m", ["w2"]]], "t2");
        const c3 = await chain.put(["m"]);
        await saver.putWrites(c3, [["m", ["w3a"]], ["other", "ignored"]], "t3");
        await saver.putWrites(c3, [["m", ["w3b"]]], "t4");
        const c4 = await chain.put(["m"]);
        await saver.putWrites(c4, [["m", ["own"]]], "t5");
        const history = await saver.getDeltaChannelHistory({ config: c4, channels: ["m"] });
        const seed = history.m?.seed;
        check(isDeltaSnapshot(seed), `the seed should be the nearest DeltaSnapshot, got ${show(seed)}`);
        checkEqual((seed as DeltaSnapshot).value, ["s0", "w0", "w1"], "the seed (the nearest snapshot, not an older one)");
        checkEqual(valuesOf(history.m), [["w2"], ["w3a"], ["w3b"]], "writes (the seed ancestor's first, oldest first, none of the target's)");
        checkEqual(history.m?.writes.map((w) => w[0]), ["t2", "t3", "t4"], "task ids of the writes");
      },
    },
    {
      name: "each channel stops at its own seed",
      async run(ctx) {
        const { saver } = await ctx.open();
        const chain = new Chain(saver, threadConfig(ctx.threadId()));
        const c0 = await chain.put(["a", "b"], { a: new DeltaSnapshot(["a0"]), b: new DeltaSnapshot(["b0"]) });
        await saver.putWrites(c0, [["a", ["a-w0"]], ["b", ["b-w0"]]], "t0");
        const c1 = await chain.put(["a", "b"], { a: new DeltaSnapshot(["a1"]) });
        await saver.putWrites(c1, [["a", ["a-w1"]], ["b", ["b-w1"]]], "t1");
        const c2 = await chain.put(["a", "b"]);
        const history = await saver.getDeltaChannelHistory({ config: c2, channels: ["a", "b"] });
        checkEqual((history.a?.seed as DeltaSnapshot | undefined)?.value, ["a1"], "seed of channel a (its snapshot at c1)");
        checkEqual(valuesOf(history.a), [["a-w1"]], "writes of channel a (from its seed on)");
        checkEqual((history.b?.seed as DeltaSnapshot | undefined)?.value, ["b0"], "seed of channel b (its snapshot at c0)");
        checkEqual(valuesOf(history.b), [["b-w0"], ["b-w1"]], "writes of channel b (from its own, older seed on)");
      },
    },
    {
      name: "an empty channel list returns an empty object",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { m: ["x"] });
        checkEqual(await saver.getDeltaChannelHistory({ config: cp, channels: [] }), {}, "history for no channels");
      },
    },
    {
      name: "without a seed up to the root, returns every write and no seed",
      async run(ctx) {
        const { saver } = await ctx.open();
        const chain = new Chain(saver, threadConfig(ctx.threadId()));
        const c0 = await chain.put(["m"]);
        await saver.putWrites(c0, [["m", ["w0"]]], "t0");
        const c1 = await chain.put(["m"]);
        await saver.putWrites(c1, [["m", ["w1"]]], "t1");
        const c2 = await chain.put(["m"]);
        const history = await saver.getDeltaChannelHistory({ config: c2, channels: ["m", "never-written"] });
        check(history.m !== undefined && !("seed" in history.m), `channel m has a seed, but none was stored: ${show(history.m)}`);
        checkEqual(valuesOf(history.m), [["w0"], ["w1"]], "writes back to the root");
        checkEqual(history["never-written"], { writes: [] }, "a channel nobody wrote");
      },
    },
    {
      name: "a plain (pre-delta) value is a seed, and the writes stored on it are replayed",
      async run(ctx) {
        const { saver } = await ctx.open();
        const chain = new Chain(saver, threadConfig(ctx.threadId()));
        const c0 = await chain.put(["m"], { m: ["plain-0", "plain-1"] });
        await saver.putWrites(c0, [["m", ["w0"]]], "t0");
        const c1 = await chain.put(["m"]);
        const history = await saver.getDeltaChannelHistory({ config: c1, channels: ["m"] });
        checkEqual(history.m?.seed, ["plain-0", "plain-1"], "the plain seed");
        checkEqual(valuesOf(history.m), [["w0"]], "writes stored on the seed checkpoint");
      },
    },
    {
      name: "follows the parent chain: a fork sees its own ancestors, not its siblings",
      async run(ctx) {
        const { saver } = await ctx.open();
        const chain = new Chain(saver, threadConfig(ctx.threadId()));
        const c0 = await chain.put(["m"], { m: new DeltaSnapshot([]) });
        await saver.putWrites(c0, [["m", ["root"]]], "t0");
        const c1 = await chain.put(["m"]);
        await saver.putWrites(c1, [["m", ["main-branch"]]], "t1");
        await chain.put(["m"]);
        const fork = await chain.put(["m"], {}, c0);
        await saver.putWrites(fork, [["m", ["fork"]]], "t2");
        const tip = await chain.put(["m"]);
        const history = await saver.getDeltaChannelHistory({ config: tip, channels: ["m"] });
        checkEqual(valuesOf(history.m), [["root"], ["fork"]], "writes on the fork's path");
      },
    },
    {
      name: "reads a deep history in a number of store calls that does not grow with depth",
      skipUnless: (info) => (info.kind === "store" ? undefined : "the factory returns a saver, not a CheckpointStore: store calls are not observable"),
      async run(ctx) {
        const opened = await ctx.open();
        const counts: number[] = [];
        for (const depth of [5, 120]) {
          const chain = new Chain(opened.saver, threadConfig(ctx.threadId()));
          let cp = await chain.put(["m"], { m: new DeltaSnapshot([]) });
          for (let i = 0; i < depth; i += 1) {
            await opened.saver.putWrites(cp, [["m", [i]]], `t${i}`);
            cp = await chain.put(["m"]);
          }
          const { store, calls } = countingStore(opened.store!);
          const history = await ctx.reopen({ saver: opened.saver, store }).getDeltaChannelHistory({ config: cp, channels: ["m"] });
          checkEqual(history.m?.writes.length, depth, `writes in a history ${depth} checkpoints deep`);
          counts.push(calls());
        }
        check(counts[1]! <= counts[0]!, `store calls grew with depth: ${counts[0]} at depth 5, ${counts[1]} at depth 120`);
      },
    },
  ],
};

/** A view of a store that counts the calls made through it. */
function countingStore(inner: CheckpointStore): { store: CheckpointStore; calls: () => number } {
  let calls = 0;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function" || prop === "capabilities") return value;
      return (...args: unknown[]) => {
        calls += 1;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls: () => calls };
}
