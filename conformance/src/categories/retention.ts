import type { RunnableConfig } from "@langchain/core/runnables";
import {
  LeaseLostError,
  ResumableSaver,
  checkpointKey,
  planRetention,
  type CheckpointStore,
  type ThreadRecords,
} from "@resumable/core";

import { check, checkEqual, collect, expectThrow, idOf, metadata, mustGet, putCheckpoint, show, threadConfig } from "../helpers.js";
import { CHAT_KINDS, chatGraph, chatTurns, everyTuple, messageView, question, stateAt, tupleView, type ChatGraph, type ChatKind } from "../retention-fixtures.js";
import type { Category, CheckContext, SubjectInfo } from "../types.js";

const retentionStores = (info: SubjectInfo) =>
  info.kind !== "store"
    ? "the factory returns a saver: prune and deleteForRuns are checked on stores, through ResumableSaver"
    : info.capabilities.retention
      ? undefined
      : "the store does not declare capabilities.retention (listThreadRecords and deleteRecords)";

interface Opened {
  saver: ResumableSaver;
  store: CheckpointStore;
}

async function open(ctx: CheckContext): Promise<Opened> {
  const opened = await ctx.open();
  check(opened.saver instanceof ResumableSaver && opened.store, "a store subject is driven through ResumableSaver");
  return { saver: opened.saver, store: opened.store };
}

/** The store's listing of a thread; the category only runs on stores that have one. */
async function recordsOf(store: CheckpointStore, threadId: string): Promise<ThreadRecords> {
  check(typeof store.listThreadRecords === "function", "the store declares capabilities.retention but has no listThreadRecords()");
  return store.listThreadRecords(threadId);
}

/** Puts `n` checkpoints in a chain on one namespace, each with metadata from `meta(i)`; returns their configs. */
async function chain(saver: ResumableSaver, threadId: string, n: number, options: { ns?: string; meta?: (i: number) => Record<string, unknown> } = {}): Promise<RunnableConfig[]> {
  const configs: RunnableConfig[] = [];
  let parent = threadConfig(threadId, options.ns ?? "");
  for (let i = 0; i < n; i += 1) {
    parent = await putCheckpoint(saver, parent, {}, { metadata: metadata(i, options.meta?.(i) ?? {}), versions: {}, newVersions: {} });
    configs.push(parent);
  }
  return configs;
}

/** Checkpoint ids of a namespace, newest first. */
async function idsOf(saver: ResumableSaver, threadId: string, ns = ""): Promise<string[]> {
  return (await collect(saver.list(threadConfig(threadId, ns)))).map((t) => t.checkpoint.id);
}

/** What a user sees of a thread: every tuple in every namespace, and the graph state at each root checkpoint. */
async function capture(saver: ResumableSaver, graph: ChatGraph, threadId: string): Promise<Map<string, unknown>> {
  const out = new Map<string, unknown>();
  for (const [key, tuple] of await everyTuple(saver, threadId)) {
    const ns = tuple.config.configurable?.checkpoint_ns ?? "";
    out.set(key, { tuple: tupleView(tuple), ...(ns === "" ? { state: await stateAt(graph, threadId, tuple.checkpoint.id) } : {}) });
  }
  return out;
}

/** The newest `n` root checkpoint keys of a capture. */
function newestRoots(captured: Map<string, unknown>, n: number): string[] {
  return [...captured.keys()]
    .filter((k) => k.startsWith("\u0000"))
    .sort()
    .reverse()
    .slice(0, n);
}

/** Fails unless every checkpoint still there reads as before, and every one in `mustStay` is still there. */
function checkKeptAsBefore(before: Map<string, unknown>, after: Map<string, unknown>, mustStay: string[], what: string): void {
  for (const key of mustStay) check(after.has(key), `${what}: checkpoint ${show(key.replace("\u0000", " "))} should have been kept, but it is gone`);
  for (const [key, view] of after) {
    check(before.has(key), `${what}: checkpoint ${show(key)} appeared`);
    checkEqual(view, before.get(key), `${what}: checkpoint ${show(key.replace("\u0000", " "))} after the prune`);
  }
}

/** Record counts and bytes of a listing. */
function tally(records: ThreadRecords): { checkpoints: number; writes: number; blobs: number; chunks: number; bytes: number } {
  let bytes = 0;
  for (const r of records.checkpoints) bytes += r.checkpoint.data.byteLength + r.metadata.data.byteLength;
  for (const b of records.blobs) bytes += b.bytes;
  for (const w of records.writes) bytes += w.bytes;
  for (const c of records.chunks) bytes += c.bytes;
  return { checkpoints: records.checkpoints.length, writes: records.writes.length, blobs: records.blobs.length, chunks: records.chunks.length, bytes };
}

/** Fails when anything of a listing is read by none of its checkpoints (an orphan). */
function checkNoOrphans(records: ThreadRecords, what: string): void {
  const all = new Set(records.checkpoints.map((r) => checkpointKey(r.checkpointNs, r.checkpointId)));
  const { request } = planRetention(records, all, new Map());
  checkEqual(
    { blobs: request.blobs, chunks: request.chunks, writes: request.checkpoints },
    { blobs: [], chunks: [], writes: [] },
    `${what}: records no checkpoint reads (orphans)`,
  );
}

/**
 * Deletes checkpoints the way a naive keep-latest prune does: every checkpoint but the newest `keep`
 * of the root namespace, with its own pending writes, and nothing else.
 */
async function naivePrune(store: CheckpointStore, threadId: string, keep: number): Promise<void> {
  const records = await recordsOf(store, threadId);
  const roots = records.checkpoints.filter((r) => r.checkpointNs === "").sort((a, b) => (a.checkpointId < b.checkpointId ? 1 : -1));
  check(typeof store.deleteRecords === "function", "the store declares capabilities.retention but has no deleteRecords()");
  await store.deleteRecords({ threadId, checkpoints: roots.slice(keep).map((r) => ({ checkpointNs: "", checkpointId: r.checkpointId })), blobs: [], chunks: [] });
}

const TURNS = 7;

/**
 * `prune` and `deleteForRuns` keep every remaining checkpoint exactly as it was, on every storage form
 * and state kind, and remove everything else. Ported from LangGraph Python's `prune` and
 * `delete_for_runs` conformance cases, plus what they lack: real graph threads (a plain message list
 * stored as delta chains, `DeltaChannel` with and without snapshots, subgraphs) read back unchanged
 * through `getTuple`, `list` and `getState`; a naive keep-latest prune shown to empty a `DeltaChannel`
 * that `prune` keeps whole; record counts and bytes that go down by what was removed, with no orphan.
 */
export const retention: Category = {
  id: "retention",
  title: "Retention (prune and deleteForRuns keep what remains exactly)",
  description:
    "prune keeps the newest checkpoints (per thread, with their subgraphs) and deleteForRuns removes a run's checkpoints; what remains reads back exactly as before through getTuple, list and getState, DeltaChannel values included (their history back to a snapshot stays, where a naive prune empties them); blobs, writes and chunks that nothing kept reads are removed, orphans of crashes included, and nothing else.",
  checks: [
    {
      name: "prune({ keepLast: 1 }) keeps only the latest checkpoint of each thread, with its pending writes, and leaves other threads alone",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const [a, b, other] = [ctx.threadId("a"), ctx.threadId("b"), ctx.threadId("other")];
        const ca = await chain(saver, a, 4);
        const cb = await chain(saver, b, 3);
        await chain(saver, other, 3);
        await saver.putWrites(ca[3]!, [["ch", "val"]], "task-1");
        const otherBefore = await idsOf(saver, other);
        const result = await saver.prune([a, b], { keepLast: 1 });
        checkEqual(await idsOf(saver, a), [idOf(ca[3]!)], "thread a after prune({ keepLast: 1 })");
        checkEqual(await idsOf(saver, b), [idOf(cb[2]!)], "thread b after prune({ keepLast: 1 })");
        checkEqual(await idsOf(saver, other), otherBefore, "a thread not named in prune()");
        const latest = await mustGet(saver, threadConfig(a), "the kept checkpoint");
        checkEqual(latest.pendingWrites, [["task-1", "ch", "val"]], "the kept checkpoint's pending writes");
        checkEqual(result.checkpoints, 3 + 2, "checkpoints prune() reports removed");
        checkEqual(result.threads, 2, "threads prune() reports");
      },
    },
    {
      name: "prune keeps the newest of each namespace whose checkpoints name no root checkpoint, and a subgraph's checkpoints with the root checkpoint they name",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        const roots = await chain(saver, thread, 3);
        const loose = await chain(saver, thread, 2, { ns: "child:1" });
        // Subgraph checkpoints as LangGraph writes them: metadata.parents names the root checkpoint.
        const sub = [
          ...(await chain(saver, thread, 2, { ns: "team:a", meta: () => ({ parents: { "": idOf(roots[0]!) } }) })),
          ...(await chain(saver, thread, 2, { ns: "team:b", meta: () => ({ parents: { "": idOf(roots[2]!) } }) })),
        ];
        await saver.prune([thread], { keepLast: 1 });
        checkEqual(await idsOf(saver, thread), [idOf(roots[2]!)], "the root namespace");
        checkEqual(await idsOf(saver, thread, "child:1"), [idOf(loose[1]!)], "a namespace whose checkpoints name no root checkpoint");
        checkEqual(await idsOf(saver, thread, "team:a"), [], "a subgraph namespace of a removed root checkpoint");
        checkEqual(await idsOf(saver, thread, "team:b"), [idOf(sub[3]!), idOf(sub[2]!)], "a subgraph namespace of the kept root checkpoint");
      },
    },
    {
      name: "prune of no thread, or of a thread that does not exist, removes nothing",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        await chain(saver, thread, 3);
        const before = await idsOf(saver, thread);
        checkEqual((await saver.prune([], { keepLast: 1 })).checkpoints, 0, "checkpoints prune([]) removed");
        checkEqual((await saver.prune([ctx.threadId("missing")], { keepLast: 1 })).checkpoints, 0, "checkpoints a prune of a missing thread removed");
        checkEqual(await idsOf(saver, thread), before, "an existing thread after those prunes");
      },
    },
    {
      name: "deleteForRuns removes the checkpoints of the named runs with their writes, in every namespace, and keeps the others",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        const runs = ["run-1", "run-2", "run-3"];
        const configs = await chain(saver, thread, 3, { meta: (i) => ({ run_id: runs[i] }) });
        await saver.putWrites(configs[0]!, [["ch", "val"]], "task-1");
        const child = await chain(saver, thread, 2, { ns: "child:1", meta: (i) => ({ run_id: runs[i] }) });
        const unrelated = ctx.threadId("unrelated");
        await chain(saver, unrelated, 2, { meta: () => ({ run_id: "run-other" }) });
        const runsOf = async (ns: string) => (await collect(saver.list(threadConfig(thread, ns)))).map((t) => (t.metadata as { run_id?: string }).run_id);
        checkEqual(await runsOf(""), ["run-3", "run-2", "run-1"], "runs named by the root checkpoints before deleteForRuns");
        const result = await saver.deleteForRuns(["run-1", "run-2"]);
        checkEqual(await runsOf(""), ["run-3"], "runs named by the root checkpoints after deleteForRuns(['run-1', 'run-2'])");
        checkEqual(await runsOf("child:1"), [], "runs named in namespace child:1 after deleteForRuns");
        checkEqual(await saver.getTuple(configs[0]!), undefined, "getTuple of a deleted run's checkpoint (with its writes)");
        checkEqual(result.checkpoints, 4, "checkpoints deleteForRuns reports removed");
        checkEqual(result.writes, 1, "writes deleteForRuns reports removed");
        checkEqual((await idsOf(saver, unrelated)).length, 2, "checkpoints of another run in another thread");
        checkEqual((await saver.deleteForRuns([])).checkpoints, 0, "checkpoints deleteForRuns([]) removed");
        checkEqual((await saver.deleteForRuns(["run-unknown"])).checkpoints, 0, "checkpoints deleteForRuns of an unknown run removed");
        checkEqual(await runsOf(""), ["run-3"], "the thread after deleteForRuns of nothing");
      },
    },
    {
      name: "after prune, every kept checkpoint of plain, DeltaChannel (with and without snapshots) and subgraph threads reads back exactly as before, and the thread continues as an unpruned copy does",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        for (const kind of CHAT_KINDS) {
          const graph = chatGraph(kind, saver);
          const thread = ctx.threadId(kind);
          await chatTurns(graph, thread, 0, TURNS);
          const before = await capture(saver, graph, thread);
          const twin = ctx.threadId(`${kind}-twin`);
          await saver.copyThread(thread, twin);
          const result = await saver.prune([thread], { keepLast: 3 });
          const reopened = ctx.reopen({ saver, store: saver.store }) as ResumableSaver;
          const after = await capture(reopened, chatGraph(kind, reopened), thread);
          checkKeptAsBefore(before, after, newestRoots(before, 3), `${kind} thread`);
          // A DeltaChannel that never snapshots is rebuilt from the thread's first write: all of it stays.
          if (kind === "delta-no-snapshot") check(result.keptForHistory > 0, `${kind} thread: the DeltaChannel's history should stay (keptForHistory is 0)`);
          else check(after.size < before.size, `${kind} thread: prune({ keepLast: 3 }) removed nothing (${before.size} checkpoints before and after)`);
          const pruned = await graph.invoke({ messages: [question(TURNS)] }, { configurable: { thread_id: thread } });
          const whole = await graph.invoke({ messages: [question(TURNS)] }, { configurable: { thread_id: twin } });
          checkEqual(messageView(pruned), messageView(whole), `${kind} thread: the next turn after the prune, against an unpruned copy`);
        }
      },
    },
    {
      name: "a naive keep-latest prune empties a DeltaChannel thread that prune keeps whole",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver, store } = await open(ctx);
        const graph = chatGraph("delta", saver);
        const naive = ctx.threadId("naive");
        const safe = ctx.threadId("safe");
        await chatTurns(graph, naive, 0, TURNS);
        await saver.copyThread(naive, safe);
        const latest = idOf((await mustGet(saver, threadConfig(naive), "the latest checkpoint")).config);
        const before = await stateAt(graph, naive, latest);
        const messages = (before as { values: { messages: unknown[] } }).values.messages.length;
        checkEqual(messages, TURNS * 2, "messages in the DeltaChannel before pruning");
        await naivePrune(store, naive, 1);
        const fresh = new ResumableSaver(store);
        const broken = await stateAt(chatGraph("delta", fresh), naive, latest);
        check(
          (broken as { values: { messages?: unknown[] } }).values.messages?.length !== messages,
          `the naive prune should have lost DeltaChannel messages (the premise of this check), but the state reads ${show(broken)}`,
        );
        await saver.prune([safe], { keepLast: 1 });
        checkEqual(await stateAt(chatGraph("delta", fresh), safe, latest), before, "the DeltaChannel state after prune({ keepLast: 1 })");
      },
    },
    {
      name: "prune removes exactly what nothing kept reads: record counts and bytes go down by what it reports, no orphan stays, a second prune removes nothing",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver, store } = await open(ctx);
        for (const kind of CHAT_KINDS) {
          const thread = ctx.threadId(kind);
          await chatTurns(chatGraph(kind, saver), thread, 0, TURNS);
          const before = tally(await recordsOf(store, thread));
          const result = await saver.prune([thread], { keepLast: 2 });
          const records = await recordsOf(store, thread);
          const after = tally(records);
          checkEqual(
            after,
            {
              checkpoints: before.checkpoints - result.checkpoints,
              writes: before.writes - result.writes,
              blobs: before.blobs - result.blobs,
              chunks: before.chunks - result.chunks,
              bytes: before.bytes - result.bytes,
            },
            `${kind} thread: records and bytes after the prune (before: ${show(before)}, removed: ${show(result)})`,
          );
          check(result.bytes > 0 || kind === "delta-no-snapshot", `${kind} thread: prune({ keepLast: 2 }) freed no bytes`);
          checkNoOrphans(records, `${kind} thread`);
          const again = await saver.prune([thread], { keepLast: 2 });
          checkEqual({ ...again, threads: 0 }, { threads: 0, checkpoints: 0, writes: 0, blobs: 0, chunks: 0, bytes: 0, keptForHistory: again.keptForHistory }, `${kind} thread: a second prune`);
        }
      },
    },
    {
      name: "prune removes what a crash left: writes without a checkpoint, blobs and chunks nothing references",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver, store } = await open(ctx);
        const thread = ctx.threadId();
        await chatTurns(chatGraph("plain", saver), thread, 0, 3);
        const records = await recordsOf(store, thread);
        // As a crash between two steps of a removal without a transaction leaves it: the oldest
        // checkpoints' records are gone, their blobs and pieces are not, and writes under their ids
        // (here written after the records went, as a put that never landed leaves them) remain.
        const roots = records.checkpoints.filter((r) => r.checkpointNs === "").sort((a, b) => (a.checkpointId < b.checkpointId ? -1 : 1));
        const gone = roots.slice(0, 4).map((r) => ({ checkpointNs: "", checkpointId: r.checkpointId }));
        check(typeof store.deleteRecords === "function", "the store declares capabilities.retention but has no deleteRecords()");
        await store.deleteRecords({ threadId: thread, checkpoints: gone, blobs: [], chunks: [] });
        for (const { checkpointId } of gone) {
          await saver.putWrites({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: checkpointId } }, [["late", "x".repeat(600)]], "task-late");
        }
        const orphaned = await recordsOf(store, thread);
        const all = new Set(orphaned.checkpoints.map((r) => checkpointKey(r.checkpointNs, r.checkpointId)));
        const leftovers = planRetention(orphaned, all, new Map()).request;
        check(leftovers.checkpoints.length > 0 && leftovers.blobs.length + leftovers.chunks.length > 0, `the simulated crash left orphans (${show(leftovers)})`);
        const beforeKept = await capture(saver, chatGraph("plain", saver), thread);
        await saver.prune([thread], { keepLast: 100 });
        const cleaned = await recordsOf(store, thread);
        checkNoOrphans(cleaned, "after prune");
        checkEqual(await capture(saver, chatGraph("plain", saver), thread), beforeKept, "the remaining checkpoints after the prune that removed the orphans");
      },
    },
    {
      name: "prune({ olderThan }) removes checkpoints written before the date and always keeps the latest",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        const graph = chatGraph("plain", saver);
        await chatTurns(graph, thread, 0, 2);
        const before = await capture(saver, graph, thread);
        await new Promise((resolve) => setTimeout(resolve, 5));
        const cut = new Date();
        await new Promise((resolve) => setTimeout(resolve, 5));
        await chatTurns(graph, thread, 2, 4);
        const recent = await capture(saver, graph, thread);
        const newer = [...recent.keys()].filter((k) => !before.has(k));
        await saver.prune([thread], { olderThan: cut });
        const after = await capture(saver, graph, thread);
        checkKeptAsBefore(recent, after, newer, "after prune({ olderThan })");
        check(after.size < recent.size, `prune({ olderThan }) removed nothing (${recent.size} checkpoints)`);
        const old = ctx.threadId("old");
        await chain(saver, old, 3);
        await saver.prune([old], { olderThan: Date.now() + 60_000 });
        checkEqual((await idsOf(saver, old)).length, 1, "checkpoints left of a thread whose every checkpoint is older than the date");
      },
    },
    {
      name: "deleteForRuns rolls a thread back: the runs' checkpoints go, the earlier state reads as before (DeltaChannel included), the thread continues from it, and its status follows",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        for (const kind of ["delta", "delta-no-snapshot", "plain"] as const satisfies readonly ChatKind[]) {
          const graph = chatGraph(kind, saver);
          const thread = ctx.threadId(kind);
          const twin = ctx.threadId(`${kind}-twin`);
          await chatTurns(graph, thread, 0, 4, kind);
          const before = await capture(saver, graph, thread);
          await saver.copyThread(thread, twin);
          await chatTurns(graph, thread, 4, 6, kind);
          // Roll the last two runs back, and an early one, which stays where later states read from it.
          const result = await saver.deleteForRuns([`${kind}-4`, `${kind}-5`, `${kind}-1`]);
          const after = await capture(saver, graph, thread);
          checkKeptAsBefore(before, after, newestRoots(before, 1), `${kind} thread rolled back`);
          check(result.checkpoints > 0, `${kind} thread: deleteForRuns removed nothing`);
          if (kind === "delta-no-snapshot") check(result.keptForHistory > 0, `${kind} thread: run-1's checkpoints are read by later DeltaChannel states and should stay`);
          const runIds = new Set([...after.values()].map((v) => ((v as { tuple: { metadata: { run_id?: string } } }).tuple.metadata.run_id)));
          check(!runIds.has(`${kind}-4`) && !runIds.has(`${kind}-5`), `${kind} thread: checkpoints of rolled-back runs remain (runs: ${show([...runIds])})`);
          if (saver.tracksStatus) {
            const status = await saver.getThreadStatus(thread);
            checkEqual(status?.checkpointId, newestRoots(before, 1)[0]!.split("\u0000")[1], `${kind} thread: the checkpoint its status describes after the rollback`);
            checkEqual(status?.state, "done", `${kind} thread: its state after the rollback`);
            const listed = (await saver.listThreads({ limit: 1000 })).threads.filter((t) => t.threadId === thread);
            checkEqual(
              listed.map((t) => [t.state, t.checkpointId]),
              [[status?.state, status?.checkpointId]],
              `${kind} thread: its entries in listThreads() after the rollback`,
            );
          }
          const a = await graph.invoke({ messages: [question(9)] }, { configurable: { thread_id: thread } });
          const b = await graph.invoke({ messages: [question(9)] }, { configurable: { thread_id: twin } });
          checkEqual(messageView(a), messageView(b), `${kind} thread: the next turn after the rollback, against a copy made before the runs`);
        }
      },
    },
    {
      name: "bad options are refused with InvalidConfigError naming the option, and nothing is removed",
      skipUnless: retentionStores,
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        await chain(saver, thread, 3);
        const before = await idsOf(saver, thread);
        const cases: Array<[string, () => Promise<unknown>]> = [
          ["options", () => saver.prune([thread], {})],
          ["options", () => saver.prune([thread], undefined as never)],
          ["keepLast", () => saver.prune([thread], { keepLast: 0 })],
          ["keepLast", () => saver.prune([thread], { keepLast: 1.5 })],
          ["olderThan", () => saver.prune([thread], { olderThan: new Date("not a date") })],
          ["thread_id", () => saver.prune([""], { keepLast: 1 })],
          ["runIds", () => saver.deleteForRuns("run-1" as never)],
          ["runIds", () => saver.deleteForRuns([""])],
        ];
        for (const [field, call] of cases) {
          const error = (await expectThrow(call, `a call with a bad ${field}`)) as { name?: string; field?: string; message?: string };
          checkEqual({ name: error.name, field: error.field }, { name: "InvalidConfigError", field }, `the error for a bad ${field} (message: ${error.message})`);
        }
        checkEqual(await idsOf(saver, thread), before, "the thread after the refused calls");
      },
    },
    {
      name: "through a leased saver, prune is fenced: after another worker claims the thread it fails with LeaseLostError and removes nothing",
      skipUnless: (info) => retentionStores(info) ?? (info.capabilities.leases ? undefined : "the store does not declare capabilities.leases"),
      async run(ctx) {
        const { saver } = await open(ctx);
        const thread = ctx.threadId();
        await chain(saver, thread, 4);
        const lease = await saver.claimLease(thread, { workerId: "worker-1", ttlMs: 1 });
        check(lease, "worker-1 claims the thread");
        const leased = saver.withLease(lease);
        await expectThrow(() => leased.prune([ctx.threadId("another")], { keepLast: 1 }), "a leased saver pruning another thread");
        await new Promise((resolve) => setTimeout(resolve, 5));
        check(await saver.claimLease(thread, { workerId: "worker-2", ttlMs: 60_000 }), "worker-2 takes the expired lease over");
        const error = await expectThrow(() => leased.prune([thread], { keepLast: 1 }), "prune through a lost lease");
        check(error instanceof LeaseLostError, `prune through a lost lease should fail with LeaseLostError, got ${show(error)}`);
        checkEqual((await idsOf(saver, thread)).length, 4, "checkpoints after the refused prune");
      },
    },
  ],
};
