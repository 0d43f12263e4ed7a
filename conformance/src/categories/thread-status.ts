import type { RunnableConfig } from "@langchain/core/runnables";
import type { ThreadStatus } from "@resumable/core";

import {
  Command,
  Counter,
  approvalGraph,
  chainGraph,
  fanOutGraph,
  functionalWorkflow,
  parallelGraph,
  pausingChainGraph,
  subgraphGraph,
} from "../graph-fixtures.js";
import { check, checkEqual, expectThrow, idOf, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category, CheckContext, Check, SubjectInfo } from "../types.js";
import { resumable } from "./leases.js";

/** Why a status check does not apply to the subject, if it does not. */
export function statusSkip(info: SubjectInfo): string | undefined {
  if (info.kind === "saver") return "the subject is a saver, not a CheckpointStore: thread status is a store capability";
  if (!info.capabilities.threadStatus) return "the store does not declare capabilities.threadStatus";
  return undefined;
}

type Durability = "exit" | "async" | "sync";
const configOf = (thread: string, durability?: Durability): RunnableConfig => ({
  configurable: { thread_id: thread },
  ...(durability ? { durability } : {}),
});

/** The status, read through a fresh saver over the same data (as another process would). */
async function statusOf(ctx: CheckContext, opened: Awaited<ReturnType<CheckContext["open"]>>, thread: string): Promise<ThreadStatus> {
  const status = await resumable(ctx.reopen(opened)).getThreadStatus(thread);
  check(status, `getThreadStatus(${JSON.stringify(thread)}) returned undefined`);
  return status;
}

/** The id of the thread's latest root checkpoint. */
async function latestId(ctx: CheckContext, opened: Awaited<ReturnType<CheckContext["open"]>>, thread: string): Promise<string> {
  const tuple = await ctx.reopen(opened).getTuple(threadConfig(thread));
  check(tuple, `the thread ${thread} has no checkpoint`);
  return idOf(tuple.config);
}

function expectState(status: ThreadStatus, state: ThreadStatus["state"], what: string): void {
  checkEqual(status.state, state, `${what}: status (${show({ error: status.error, interrupts: status.interrupts })})`);
}

const check_ = (name: string, run: Check["run"]): Check => ({ name, skipUnless: statusSkip, run });

/**
 * The status the saver keeps on put and putWrites, for real LangGraph.js graphs: done, pending after
 * a run that stopped, failed (with the error), interrupted (with the interrupt's value), through
 * subgraphs, `Send` and the functional API, in every durability mode.
 */
export const threadStatus: Category = {
  id: "thread-status",
  title: "Thread status of real graphs (done, pending, failed, interrupted)",
  description:
    "After real LangGraph.js runs, getThreadStatus (read by a fresh saver) says done, pending (a run that stopped mid-way), failed (with the error) or interrupted (with the interrupt's value) for the latest root checkpoint; resuming updates it; status changes are conditional on the checkpoint; a new checkpoint resets attempts; deleteThread removes it.",
  checks: [
    ...(["exit", "async", "sync"] as const).map((durability) =>
      check_(`durability "${durability}": done, failed with the error, then done after the retry`, async (ctx) => {
        const opened = await ctx.open();
        const thread = ctx.threadId();
        await chainGraph(new Counter()).compile({ checkpointer: opened.saver }).invoke({ log: [] }, configOf(thread, durability));
        const done = await statusOf(ctx, opened, thread);
        expectState(done, "done", "after a finished run");
        checkEqual(done.checkpointId, await latestId(ctx, opened, thread), "the status names the latest root checkpoint");
        const failing = ctx.threadId("failing");
        let fail = true;
        await expectThrow(
          () => parallelGraph(new Counter(), () => fail).compile({ checkpointer: opened.saver }).invoke({ log: [] }, configOf(failing, durability)),
          "the run whose branch throws",
        );
        const failed = await statusOf(ctx, opened, failing);
        expectState(failed, "failed", "after a failed branch");
        check(failed.error?.includes("flaky branch failed on purpose"), `the status's error is ${show(failed.error)}, not the branch's`);
        checkEqual(failed.checkpointId, await latestId(ctx, opened, failing), "the failed status names the latest root checkpoint");
        fail = false;
        await parallelGraph(new Counter(), () => fail).compile({ checkpointer: ctx.reopen(opened) }).invoke(null, configOf(failing, durability));
        expectState(await statusOf(ctx, opened, failing), "done", "after the retry");
      }),
    ),
    ...(["exit", "async", "sync"] as const).map((durability) =>
      check_(`durability "${durability}": interrupted with the interrupt's value, done after Command({ resume })`, async (ctx) => {
        const opened = await ctx.open();
        const thread = ctx.threadId();
        await approvalGraph(new Counter()).compile({ checkpointer: opened.saver }).invoke({ log: [] }, configOf(thread, durability));
        const waiting = await statusOf(ctx, opened, thread);
        expectState(waiting, "interrupted", "after interrupt()");
        checkEqual(waiting.interrupts.map((i) => i.value), ["approve the refund?"], "the interrupts' values");
        check(waiting.interrupts.every((i) => typeof i.taskId === "string" && i.taskId.length > 0), `interrupts without a task id: ${show(waiting.interrupts)}`);
        await approvalGraph(new Counter()).compile({ checkpointer: ctx.reopen(opened) }).invoke(new Command({ resume: "yes" }), configOf(thread, durability));
        const done = await statusOf(ctx, opened, thread);
        expectState(done, "done", "after the resume");
        checkEqual(done.interrupts, [], "interrupts after the resume");
      }),
    ),
    check_("pending after a run that stopped mid-way (aborted), done once invoke(null) finishes it", async (ctx) => {
      const opened = await ctx.open();
      const thread = ctx.threadId();
      const controller = new AbortController();
      const graph = pausingChainGraph(new Counter(), async () => {
        controller.abort();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }).compile({ checkpointer: opened.saver });
      await expectThrow(() => graph.invoke({ log: [] }, { ...configOf(thread, "sync"), signal: controller.signal }), "the aborted run");
      const stopped = await statusOf(ctx, opened, thread);
      expectState(stopped, "pending", "after a run stopped inside node b");
      checkEqual(stopped.checkpointId, await latestId(ctx, opened, thread), "the pending status names the latest root checkpoint");
      await pausingChainGraph(new Counter(), async () => undefined).compile({ checkpointer: ctx.reopen(opened) }).invoke(null, configOf(thread));
      expectState(await statusOf(ctx, opened, thread), "done", "after invoke(null)");
    }),
    check_("a subgraph's interrupt marks the root thread interrupted with the subgraph's value", async (ctx) => {
      const opened = await ctx.open();
      const thread = ctx.threadId();
      const counter = new Counter();
      await subgraphGraph(counter).compile({ checkpointer: opened.saver }).invoke({ log: [], inner: [] }, configOf(thread));
      const waiting = await statusOf(ctx, opened, thread);
      expectState(waiting, "interrupted", "after the subgraph's interrupt()");
      checkEqual(waiting.interrupts.map((i) => i.value), ["inner question"], "the interrupts' values");
      await subgraphGraph(counter).compile({ checkpointer: ctx.reopen(opened) }).invoke(new Command({ resume: "fine" }), configOf(thread));
      expectState(await statusOf(ctx, opened, thread), "done", "after the resume");
    }),
    check_("the functional API: interrupted inside the entrypoint, done after the resume", async (ctx) => {
      const opened = await ctx.open();
      const thread = ctx.threadId();
      const counter = new Counter();
      await functionalWorkflow(counter, opened.saver).invoke(5, configOf(thread));
      const waiting = await statusOf(ctx, opened, thread);
      expectState(waiting, "interrupted", "after the entrypoint's interrupt()");
      checkEqual(waiting.interrupts.map((i) => i.value), ["continue?"], "the interrupts' values");
      await functionalWorkflow(counter, ctx.reopen(opened)).invoke(new Command({ resume: "go" }), configOf(thread));
      expectState(await statusOf(ctx, opened, thread), "done", "after the resume");
    }),
    check_("Send fan-out: a failed item marks the thread failed; the retry finishes it", async (ctx) => {
      const opened = await ctx.open();
      const thread = ctx.threadId();
      let fail = true;
      const items = [0, 1, 2, 3];
      await expectThrow(
        () => fanOutGraph(new Counter(), 2, () => fail, items.length).compile({ checkpointer: opened.saver }).invoke({ items }, configOf(thread)),
        "the run whose item 2 throws",
      );
      const failed = await statusOf(ctx, opened, thread);
      expectState(failed, "failed", "after a failed Send item");
      check(failed.error?.includes("work item 2 failed on purpose"), `the status's error is ${show(failed.error)}`);
      fail = false;
      await fanOutGraph(new Counter(), 2, () => fail, items.length).compile({ checkpointer: ctx.reopen(opened) }).invoke(null, configOf(thread));
      expectState(await statusOf(ctx, opened, thread), "done", "after the retry");
    }),
    check_("status changes apply only to the checkpoint they name; attempts count until the next checkpoint; deleteThread removes the status", async (ctx) => {
      const opened = await ctx.open();
      const saver = resumable(opened.saver);
      const thread = ctx.threadId();
      const first = await putCheckpoint(saver, threadConfig(thread), { "branch:to:work": null });
      const pending = await saver.getThreadStatus(thread);
      checkEqual([pending?.state, pending?.checkpointId, pending?.attempts], ["pending", idOf(first), 0], "status of a checkpoint with a triggered node");
      const attempt = await saver.updateThreadStatus(thread, { checkpointId: idOf(first), addAttempts: 1, attemptedAt: 1234 });
      checkEqual([attempt?.attempts, attempt?.attemptedAt, attempt?.state], [1, 1234, "pending"], "after one attempt");
      const twice = await saver.updateThreadStatus(thread, { checkpointId: idOf(first), addAttempts: 1, attemptedAt: 5678 });
      checkEqual(twice?.attempts, 2, "attempts after a second attempt");
      checkEqual(await saver.updateThreadStatus(thread, { checkpointId: "not-the-latest", state: "dead" }), undefined, "a change naming another checkpoint");
      checkEqual((await saver.getThreadStatus(thread))?.state, "pending", "the state after that change");
      const dead = await saver.updateThreadStatus(thread, { checkpointId: idOf(first), state: "dead", error: "gave up after 2 attempts" });
      checkEqual([dead?.state, dead?.error, dead?.attempts], ["dead", "gave up after 2 attempts", 2], "after dead-lettering");
      const second = await putCheckpoint(saver, first, { done: true }, { versions: { done: 1 } });
      const fresh = await resumable(ctx.reopen(opened)).getThreadStatus(thread);
      checkEqual(
        [fresh?.state, fresh?.checkpointId, fresh?.attempts, fresh?.error, fresh?.attemptedAt],
        ["done", idOf(second), 0, undefined, undefined],
        "after a new root checkpoint (state from the checkpoint, attempts reset, dead cleared)",
      );
      // A checkpoint of a subgraph's namespace leaves the root's status alone.
      await putCheckpoint(saver, threadConfig(thread, "sub:1"), { "branch:to:x": null });
      checkEqual((await saver.getThreadStatus(thread))?.checkpointId, idOf(second), "status after a subgraph namespace's checkpoint");
      await saver.deleteThread(thread);
      checkEqual(await saver.getThreadStatus(thread), undefined, "status after deleteThread");
      checkEqual(await saver.getThreadStatus(ctx.threadId("never")), undefined, "status of a thread never written");
    }),
    check_("puts in quick succession: each names its checkpoint and resets attempts; the listing agrees with the status; a state change moves updatedAt", async (ctx) => {
      // The saver lets a store keep updatedAt for puts that keep the state (statusResolutionMs); whether
      // the store does or not, everything else must be the latest put's, and the index must agree.
      const opened = await ctx.open();
      const saver = resumable(opened.saver);
      const thread = ctx.threadId();
      const started = Date.now();
      let config = await putCheckpoint(saver, threadConfig(thread), { "branch:to:work": null });
      await saver.updateThreadStatus(thread, { checkpointId: idOf(config), addAttempts: 1, attemptedAt: 1234 });
      for (let i = 0; i < 5; i += 1) config = await putCheckpoint(saver, config, { "branch:to:work": null }, { versions: { "branch:to:work": 1 } });
      const status = await saver.getThreadStatus(thread);
      checkEqual([status?.state, status?.checkpointId, status?.attempts, status?.attemptedAt], ["pending", idOf(config), 0, undefined], "status after six puts of a pending thread");
      check(status!.updatedAt >= started && status!.updatedAt <= Date.now(), `updatedAt ${status?.updatedAt} is not between the first put and now`);
      const listed = (await saver.listThreads({ status: "pending", limit: 1000 })).threads.filter((t) => t.threadId === thread);
      checkEqual(listed.map((t) => [t.checkpointId, t.updatedAt]), [[idOf(config), status!.updatedAt]], "the listing of the pending thread");
      await new Promise((resolve) => setTimeout(resolve, 5));
      const beforeDone = Date.now();
      const done = await putCheckpoint(saver, config, { result: 1 }, { versions: { result: 1 } });
      const after = await saver.getThreadStatus(thread);
      checkEqual([after?.state, after?.checkpointId], ["done", idOf(done)], "status after a finishing checkpoint");
      check(after!.updatedAt >= beforeDone, `a state change left updatedAt at ${after?.updatedAt}, before the put (${beforeDone})`);
      check(!(await saver.listThreads({ status: "pending", limit: 1000 })).threads.some((t) => t.threadId === thread), "the finished thread is still listed as pending");
    }),
  ],
};
