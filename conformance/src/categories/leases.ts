import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { LeaseLostError, type Lease, type ResumableSaver } from "@resumable/core";

import { Counter, chainGraph, pausingChainGraph } from "../graph-fixtures.js";
import { check, checkEqual, collect, expectThrow, idOf, metadata, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { CheckContext, Check, Category, OpenedSubject, SubjectInfo } from "../types.js";

/** Why a lease check does not apply to the subject, if it does not. */
export function leasesSkip(info: SubjectInfo): string | undefined {
  if (info.kind === "saver") return "the subject is a saver, not a CheckpointStore: leases are a store capability";
  if (!info.capabilities.leases) return "the store does not declare capabilities.leases";
  return undefined;
}

/** The subject's saver, typed as core's (leases live on ResumableSaver). */
export function resumable(saver: BaseCheckpointSaver): ResumableSaver {
  return saver as ResumableSaver;
}

/** Two savers over one store, as two worker processes would have. */
async function twoWorkers(ctx: CheckContext): Promise<{ opened: OpenedSubject; a: ResumableSaver; b: ResumableSaver }> {
  const opened = await ctx.open();
  return { opened, a: resumable(opened.saver), b: resumable(ctx.reopen(opened)) };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Claims a thread, waiting out a lease another worker holds (short TTLs only). */
async function claimWhenFree(saver: ResumableSaver, threadId: string, workerId: string, ttlMs: number, timeoutMs = 20_000): Promise<Lease> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const lease = await saver.claimLease(threadId, { workerId, ttlMs });
    if (lease) return lease;
    if (Date.now() > deadline) throw new Error(`worker ${workerId} could not claim ${threadId} within ${timeoutMs} ms`);
    await sleep(5 + Math.random() * 10);
  }
}

async function expectLeaseLost(fn: () => Promise<unknown>, what: string, token: number): Promise<void> {
  const error = await expectThrow(fn, what);
  check(error instanceof LeaseLostError, `${what}: expected a LeaseLostError, got ${show(error)}`);
  checkEqual((error as LeaseLostError).token, token, `${what}: the refused token named by the error`);
}

/** Every parent with more than one child, over every namespace of a thread. */
export async function forks(saver: BaseCheckpointSaver, threadId: string): Promise<string[]> {
  const tuples: CheckpointTuple[] = await collect(saver.list({ configurable: { thread_id: threadId } }));
  const children = new Map<string, string[]>();
  for (const t of tuples) {
    const parent = t.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent === undefined) continue;
    const key = `${String(t.config.configurable?.checkpoint_ns)}|${parent}`;
    children.set(key, [...(children.get(key) ?? []), idOf(t.config)]);
  }
  return [...children].filter(([, c]) => c.length > 1).map(([p, c]) => `${p} has ${c.length} children (${c.join(", ")})`);
}

const check_ = (name: string, run: Check["run"]): Check => ({ name, skipUnless: leasesSkip, run });

/**
 * Thread leases with fencing tokens: claims exclude each other, tokens only grow, and a worker whose
 * lease was taken over can no longer write anything, checked through two savers over one store.
 */
export const leases: Category = {
  id: "leases",
  title: "Thread leases with fencing (claim, renew, release, takeover)",
  description:
    "claimLease hands out increasing fencing tokens and excludes other workers until expiry or release; a worker whose lease was taken over is refused on its next put, putWrites and status change, and nothing it tried to write is visible; two workers invoking one thread through leases leave it unforked.",
  checks: [
    check_("claim excludes other workers until release or expiry; tokens increase, also for a re-claim by the holder", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("lease");
      const first = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(first, "the first claim of a fresh thread returned undefined");
      check(Number.isSafeInteger(first.token) && first.token >= 1, `the first token is not a positive integer: ${show(first.token)}`);
      checkEqual([first.threadId, first.workerId], [thread, "worker-a"], "the lease names its thread and worker");
      check(first.expiresAt > Date.now() + 30_000, `expiresAt ${first.expiresAt} is not about 60 s from now (${Date.now()})`);
      checkEqual(await b.claimLease(thread, { workerId: "worker-b", ttlMs: 60_000 }), undefined, "a claim while another worker holds the lease");
      const again = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(again && again.token > first.token, `a re-claim by the holder got token ${show(again?.token)}, not greater than ${first.token}`);
      await a.releaseLease(again);
      const b1 = await b.claimLease(thread, { workerId: "worker-b", ttlMs: 150 });
      check(b1 && b1.token > again.token, `the claim after a release got ${show(b1?.token)}, not greater than ${again.token}`);
      checkEqual(await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 }), undefined, "a claim while the 150 ms lease is still valid");
      await sleep(300);
      const a2 = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(a2 && a2.token > b1.token, `the claim after expiry got ${show(a2?.token)}, not greater than ${b1.token}`);
      const state = await b.getLease(thread);
      checkEqual(state && [state.token, state.workerId, state.released], [a2.token, "worker-a", false], "getLease after the takeover");
      checkEqual(await a.getLease(ctx.threadId("never")), undefined, "getLease of a thread never claimed");
    }),
    check_("of many concurrent claims on a free thread exactly one succeeds", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("race");
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).claimLease(thread, { workerId: `worker-${i}`, ttlMs: 60_000 })),
      );
      const won = results.filter((r): r is Lease => r !== undefined);
      checkEqual(won.length, 1, "claims that succeeded");
      checkEqual((await a.getLease(thread))?.token, won[0]!.token, "the stored token is the winner's");
    }),
    check_("renew extends a lease, also after expiry when nobody claimed; a lease taken over or released can no longer be renewed", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("renew");
      const lease = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 100 });
      check(lease, "claim returned undefined");
      await sleep(200);
      const renewed = await a.renewLease(lease, 60_000);
      checkEqual(renewed.token, lease.token, "renew keeps the token");
      check(renewed.expiresAt > Date.now() + 30_000, `renewed expiresAt ${renewed.expiresAt} is not about 60 s from now`);
      checkEqual(await b.claimLease(thread, { workerId: "worker-b", ttlMs: 60_000 }), undefined, "a claim right after the renewal");
      await a.releaseLease(renewed);
      await expectLeaseLost(() => a.renewLease(renewed, 60_000), "renewing a released lease", renewed.token);
      const taken = await b.claimLease(thread, { workerId: "worker-b", ttlMs: 60_000 });
      check(taken, "the claim after the release returned undefined");
      await expectLeaseLost(() => a.renewLease(renewed, 60_000), "renewing a lease another worker took over", renewed.token);
      await a.releaseLease(renewed); // no longer current: does nothing
      checkEqual((await b.getLease(thread))?.released, false, "a stale release left the new holder's lease alone");
    }),
    check_("a worker whose lease was taken over is refused on its next put and putWrites, and nothing it tried to write is visible", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("takeover");
      const leaseA = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 150 });
      check(leaseA, "claim returned undefined");
      const fencedA = a.withLease(leaseA);
      const first = await putCheckpoint(fencedA, threadConfig(thread), { n: 1 }, { metadata: metadata(0) });
      await fencedA.putWrites(first, [["n", 2]], "task-a1");
      await sleep(300);
      const leaseB = await b.claimLease(thread, { workerId: "worker-b", ttlMs: 60_000 });
      check(leaseB && leaseB.token > leaseA.token, `worker b could not take the expired lease over (${show(leaseB)})`);
      await expectLeaseLost(
        () => putCheckpoint(fencedA, first, { n: 99 }, { versions: { n: 2 }, metadata: metadata(1) }),
        "worker a's put after the takeover",
        leaseA.token,
      );
      await expectLeaseLost(() => fencedA.putWrites(first, [["n", 99]], "task-a2"), "worker a's putWrites after the takeover", leaseA.token);
      await expectLeaseLost(() => fencedA.putWrites(first, [["__error__", { message: "stale" }]], "task-a3"), "worker a's special write after the takeover", leaseA.token);
      const fencedB = b.withLease(leaseB);
      const listed = await collect(b.list(threadConfig(thread)));
      checkEqual(listed.map((t) => idOf(t.config)), [idOf(first)], "checkpoints of the thread after worker a was refused");
      const latest = await b.getTuple(threadConfig(thread));
      checkEqual(
        latest?.pendingWrites?.map(([task, channel, value]) => [task, channel, value]),
        [["task-a1", "n", 2]],
        "pending writes on the checkpoint (the writes made before the takeover, none after)",
      );
      const next = await putCheckpoint(fencedB, first, { n: 3 }, { versions: { n: 3 }, metadata: metadata(1) });
      await fencedB.putWrites(next, [["n", 4]], "task-b1");
      checkEqual((await b.getTuple(threadConfig(thread)))?.checkpoint.channel_values, { n: 3 }, "worker b's checkpoint is the latest");
      if (ctx.info.capabilities.threadStatus) {
        const status = await b.getThreadStatus(thread);
        checkEqual(status?.checkpointId, idOf(next), "the thread status names worker b's checkpoint");
        await expectLeaseLost(
          () => fencedA.updateThreadStatus(thread, { checkpointId: idOf(next), state: "dead", error: "stale" }),
          "worker a's status change after the takeover",
          leaseA.token,
        );
        checkEqual((await b.getThreadStatus(thread))?.state, status?.state, "the status after worker a's refused change");
      }
    }),
    check_("a released lease fences its holder; a leased saver refuses other threads", async (ctx) => {
      const { a } = await twoWorkers(ctx);
      const thread = ctx.threadId("released");
      const lease = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(lease, "claim returned undefined");
      const fenced = a.withLease(lease);
      const cp = await putCheckpoint(fenced, threadConfig(thread), { n: 1 });
      await a.releaseLease(lease);
      await expectLeaseLost(() => putCheckpoint(fenced, cp, { n: 2 }, { versions: { n: 2 } }), "a put after the holder released the lease", lease.token);
      const other = ctx.threadId("other");
      const error = await expectThrow(() => putCheckpoint(fenced, threadConfig(other), { n: 1 }), "a put to another thread through a leased saver");
      check(/bound to the lease of thread/.test(String(error)), `unexpected error for another thread: ${show(error)}`);
      checkEqual(await a.getTuple(threadConfig(other)), undefined, "the other thread after the refused put");
    }),
    check_("tokens keep increasing across deleteThread", async (ctx) => {
      const { a } = await twoWorkers(ctx);
      const thread = ctx.threadId("deleted");
      const lease = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(lease, "claim returned undefined");
      await putCheckpoint(a.withLease(lease), threadConfig(thread), { n: 1 });
      await a.deleteThread(thread);
      const after = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 60_000 });
      check(after && after.token > lease.token, `after deleteThread the claim got token ${show(after?.token)}, not greater than ${lease.token}`);
      await expectLeaseLost(() => putCheckpoint(a.withLease(lease), threadConfig(thread), { n: 2 }), "a put with the lease of the deleted thread", lease.token);
    }),
    check_("a graph run through a leased saver stops with LeaseLostError once its lease is taken over; its step is not stored", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("run");
      const cfg: RunnableConfig = { configurable: { thread_id: thread } };
      const leaseA = await a.claimLease(thread, { workerId: "worker-a", ttlMs: 100 });
      check(leaseA, "claim returned undefined");
      let lost: LeaseLostError | undefined;
      const counter = new Counter();
      let release!: () => void;
      const paused = new Promise<void>((resolve) => (release = resolve));
      let reached!: () => void;
      const inB = new Promise<void>((resolve) => (reached = resolve));
      // Node b pauses (a garbage-collection pause, a network partition) while the lease expires.
      const graph = pausingChainGraph(counter, async () => {
        reached();
        await paused;
      }).compile({ checkpointer: a.withLease(leaseA, { onLost: (e) => (lost = e) }) });
      const run = graph.invoke({ log: [] }, { ...cfg, durability: "sync" });
      run.catch(() => undefined);
      await inB;
      await sleep(200);
      const leaseB = await b.claimLease(thread, { workerId: "worker-b", ttlMs: 60_000 });
      check(leaseB, "worker b could not take the expired lease over");
      const before = (await collect(b.list(threadConfig(thread)))).map((t) => idOf(t.config));
      release();
      const error = await expectThrow(() => run, "the run whose lease was taken over");
      check(error instanceof LeaseLostError, `the run failed with ${show(error)}, not a LeaseLostError`);
      check(lost instanceof LeaseLostError, "onLost was not called with the LeaseLostError");
      const after = (await collect(b.list(threadConfig(thread)))).map((t) => idOf(t.config));
      checkEqual(after, before, "checkpoints of the thread after the stale run stopped (none added after the takeover)");
      const latest = await b.getTuple(threadConfig(thread));
      checkEqual(
        (latest?.pendingWrites ?? []).filter(([, channel]) => channel === "log").map(([, , v]) => v),
        [],
        "the paused node's writes on the latest checkpoint",
      );
      const resumed = await pausingChainGraph(counter, async () => undefined).compile({ checkpointer: b.withLease(leaseB) }).invoke(null, cfg);
      checkEqual(resumed.log, ["a", "b", "c"], "worker b's resumed run");
      checkEqual(counter.counts, { a: 1, b: 2, c: 1 }, "node executions (a ran once, before the takeover)");
      checkEqual(await forks(b, thread), [], "checkpoints with more than one child");
    }),
    check_("two workers invoking one thread at once through leases leave it unforked, every turn in one lineage", async (ctx) => {
      const { a, b } = await twoWorkers(ctx);
      const thread = ctx.threadId("concurrent");
      const cfg: RunnableConfig = { configurable: { thread_id: thread } };
      const turns = 4;
      const worker = async (saver: ResumableSaver, name: string) => {
        for (let turn = 0; turn < turns; turn += 1) {
          const lease = await claimWhenFree(saver, thread, name, 30_000);
          try {
            // b takes a moment, so that the two workers' runs overlap unless the leases keep them apart.
            await pausingChainGraph(new Counter(), () => sleep(10))
              .compile({ checkpointer: saver.withLease(lease) })
              .invoke({ log: [`${name}:${turn}`] }, cfg);
          } finally {
            await saver.releaseLease(lease);
          }
        }
      };
      await Promise.all([worker(a, "worker-a"), worker(b, "worker-b")]);
      checkEqual(await forks(a, thread), [], "checkpoints with more than one child");
      const final = await a.getTuple(cfg);
      const log = (final?.checkpoint.channel_values as { log?: string[] } | undefined)?.log ?? [];
      checkEqual(log.filter((entry) => entry.startsWith("worker-")).length, 2 * turns, `inputs in the final state's lineage (log: ${show(log)})`);
      checkEqual(log.length, 2 * turns * 4, "entries in the final log (each turn: its input and a, b, c)");
    }),
  ],
};
