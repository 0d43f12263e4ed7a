import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, Command, DeltaChannel, END, MessagesAnnotation, START, StateGraph, messagesDeltaReducer } from "@langchain/langgraph";
import type { CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { ResumableSaver, type CheckpointStore } from "@resumable/core";

import { Counter, approvalGraph, subgraphGraph } from "../graph-fixtures.js";
import { check, checkEqual, collect, expectThrow, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category, CheckContext, SubjectInfo } from "../types.js";

const NAMESPACES = ["", "child:1f0a", "child:1f0a|grandchild:2b"];

const storesOnly = (info: SubjectInfo) =>
  info.kind === "store" ? undefined : "the factory returns a saver: copyThread is checked on stores, through ResumableSaver";

/** The saver of a store subject, typed as the ResumableSaver the suite wraps it in. */
async function open(ctx: CheckContext): Promise<{ saver: ResumableSaver; store: CheckpointStore }> {
  const opened = await ctx.open();
  check(opened.saver instanceof ResumableSaver && opened.store, "a store subject is driven through ResumableSaver");
  return { saver: opened.saver, store: opened.store };
}

/** A tuple as a user reads it, without the thread id (which a copy changes on purpose). */
function view(tuple: CheckpointTuple): unknown {
  return {
    ns: tuple.config.configurable?.checkpoint_ns,
    id: tuple.checkpoint.id,
    parent: tuple.parentConfig?.configurable?.checkpoint_id,
    values: tuple.checkpoint.channel_values,
    versions: tuple.checkpoint.channel_versions,
    seen: tuple.checkpoint.versions_seen,
    metadata: tuple.metadata,
    writes: tuple.pendingWrites,
  };
}

/** Every checkpoint of every namespace of a thread, as a user reads it, newest first per namespace. */
async function everything(saver: ResumableSaver, threadId: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const ns of NAMESPACES) {
    for (const tuple of await collect(saver.list(threadConfig(threadId, ns)))) out.push(view(tuple));
  }
  return out;
}

/** Fills a thread: checkpoints and pending writes in three namespaces, one value large enough for chunks. */
async function fillThread(saver: ResumableSaver, threadId: string, large: string): Promise<void> {
  for (const ns of NAMESPACES) {
    let parent: RunnableConfig = threadConfig(threadId, ns);
    for (let step = 0; step < 3; step += 1) {
      const values = { a: `a${step} of ${ns}`, big: large, n: step };
      parent = await putCheckpoint(saver, parent, values, { metadata: { source: "loop", step, parents: {}, run_id: `run-${step}` } as never });
      await saver.putWrites(parent, [["a", `write ${step}`], ["big", large]], `task-${step}`);
    }
  }
}

function largeValue(ctx: CheckContext): string {
  const limit = ctx.info.capabilities.maxItemBytes;
  return Number.isFinite(limit) ? "y".repeat(Math.min(limit * 2 + 11, 8 * 1024 * 1024)) : "y".repeat(4096);
}

const DeltaMessages = Annotation.Root({
  messages: () =>
    new DeltaChannel<BaseMessage[], unknown>(messagesDeltaReducer as (state: BaseMessage[], writes: unknown[]) => BaseMessage[], {
      snapshotFrequency: 4,
    }),
});

/** A chat graph whose answers follow from the message count, as plain reducer or DeltaChannel. */
function chat(kind: "plain" | "delta", saver: ResumableSaver) {
  const assistant = (state: { messages: BaseMessage[] }) => {
    const n = state.messages.length;
    return { messages: [new AIMessage({ content: `answer ${n}: ${"lorem ipsum ".repeat(40)}`, id: `ai-${n}` })] };
  };
  return new StateGraph((kind === "plain" ? MessagesAnnotation : DeltaMessages) as typeof MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer: saver });
}

const question = (i: number) => new HumanMessage({ content: `question ${i}: ${"dolor sit amet ".repeat(30)}`, id: `user-${i}` });

type Snapshotting = { getStateHistory(config: RunnableConfig): AsyncIterable<{ values: unknown; next: unknown; metadata?: unknown; tasks: unknown[]; config: RunnableConfig }> };

/** Every state of a thread's history through the graph, as a user sees it. */
async function history(graph: Snapshotting, threadId: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const s of graph.getStateHistory({ configurable: { thread_id: threadId } })) {
    out.push({
      id: s.config.configurable?.checkpoint_id,
      values: messageView(s.values),
      next: s.next,
      // getStateHistory adds the thread id it was asked for to the metadata it returns.
      metadata: withoutThreadId(s.metadata),
      interrupts: (s.tasks as Array<{ interrupts?: unknown[] }>).map((t) => t.interrupts ?? []),
    });
  }
  return out;
}

function withoutThreadId(metadata: unknown): unknown {
  if (metadata === null || typeof metadata !== "object") return metadata;
  const { thread_id: _threadId, ...rest } = metadata as Record<string, unknown>;
  return rest;
}

function messageView(values: unknown): unknown {
  const v = values as { messages?: BaseMessage[] };
  if (!Array.isArray(v?.messages)) return values;
  return { ...v, messages: v.messages.map((m) => ({ class: m.constructor?.name, id: m.id, content: m.content })) };
}

/** A store whose putCheckpoint fails after `allowed` successful calls, as a crash would cut a copy short. */
function failingAfter(store: CheckpointStore, allowed: number): CheckpointStore {
  let calls = 0;
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "putCheckpoint") {
        return async (request: Parameters<CheckpointStore["putCheckpoint"]>[0]) => {
          calls += 1;
          if (calls > allowed) throw new Error(`simulated crash before putCheckpoint #${calls}`);
          return target.putCheckpoint(request);
        };
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * `copyThread` (the whole history of every namespace, with pending writes, under a new id) reads back
 * exactly as the source on every storage form, leaves the source alone, refuses to mix histories, and
 * completes a copy cut short. Ported from LangGraph Python's `copy_thread` conformance cases, plus
 * graph threads, DeltaChannel, interrupts, subgraphs and interrupted copies.
 */
export const copyThread: Category = {
  id: "copy-thread",
  title: "copyThread (every checkpoint, exactly, under a new thread id)",
  description:
    "copyThread copies every checkpoint of every namespace with metadata, values and pending writes, in order; every state of a copied graph thread (plain, DeltaChannel, interrupted, subgraph) reads back as the source's and continues as it would; the source is unchanged; a target with its own checkpoints is refused; a copy cut short is whole as far as it got and completed by a second call.",
  checks: [
    {
      name: "copies every checkpoint, value, metadata and pending write of every namespace, in order, and leaves the source unchanged",
      skipUnless: storesOnly,
      async run(ctx) {
        const { saver } = await open(ctx);
        const from = ctx.threadId("src");
        const to = ctx.threadId("dst");
        await fillThread(saver, from, largeValue(ctx));
        const before = await everything(saver, from);
        checkEqual(before.length, NAMESPACES.length * 3, "checkpoints in the source");
        const result = await saver.copyThread(from, to);
        checkEqual(result.checkpoints, NAMESPACES.length * 3, "checkpoints copyThread reports");
        checkEqual(result.writes, NAMESPACES.length * 3 * 2, "writes copyThread reports");
        checkEqual(await everything(saver, to), before, "the copy, read through list() in every namespace");
        checkEqual(await everything(saver, from), before, "the source after copyThread");
        const latest = await saver.getTuple(threadConfig(to));
        check(latest?.config.configurable?.thread_id === to, `getTuple on the copy names the copy's thread, got ${show(latest?.config)}`);
        const reopened = ctx.reopen({ saver, store: saver.store });
        checkEqual(await everything(reopened as ResumableSaver, to), before, "the copy read by a new saver (no cache)");
      },
    },
    {
      name: "copying a thread that does not exist writes nothing",
      skipUnless: storesOnly,
      async run(ctx) {
        const { saver } = await open(ctx);
        const to = ctx.threadId("dst");
        const result = await saver.copyThread(ctx.threadId("missing"), to);
        checkEqual(result.checkpoints, 0, "checkpoints copied from a missing thread");
        checkEqual(await everything(saver, to), [], "the target after copying a missing thread");
      },
    },
    {
      name: "every state of plain, DeltaChannel, interrupted and subgraph threads reads back as the source's, and the copy continues as the source does",
      skipUnless: storesOnly,
      async run(ctx) {
        const { saver } = await open(ctx);
        for (const kind of ["plain", "delta"] as const) {
          const graph = chat(kind, saver);
          const from = ctx.threadId(`${kind}-src`);
          const to = ctx.threadId(`${kind}-dst`);
          for (let i = 0; i < 9; i += 1) await graph.invoke({ messages: [question(i)] }, { configurable: { thread_id: from } });
          const before = await history(graph, from);
          await saver.copyThread(from, to);
          checkEqual(await history(graph, to), before, `${kind} chat: the copy's history`);
          const a = await graph.invoke({ messages: [question(9)] }, { configurable: { thread_id: from } });
          const b = await graph.invoke({ messages: [question(9)] }, { configurable: { thread_id: to } });
          checkEqual(messageView(b), messageView(a), `${kind} chat: the next turn on the copy and on the source`);
          checkEqual((await history(graph, from)).slice(3), before, `${kind} chat: the source's history, untouched but for its own new turn`);
        }
        for (const [label, build, answer] of [
          ["approval", approvalGraph, "yes"],
          ["subgraph", subgraphGraph, "sub-yes"],
        ] as const) {
          const graph = build(new Counter()).compile({ checkpointer: saver }) as unknown as Snapshotting & {
            invoke(input: unknown, config: RunnableConfig): Promise<unknown>;
          };
          const from = ctx.threadId(`${label}-src`);
          const to = ctx.threadId(`${label}-dst`);
          await graph.invoke({ log: ["start"] }, { configurable: { thread_id: from } });
          const before = await history(graph, from);
          check((before[0] as { interrupts: unknown[][] }).interrupts.flat().length > 0, `${label}: the source waits on an interrupt`);
          await saver.copyThread(from, to);
          checkEqual(await history(graph, to), before, `${label}: the copy's history`);
          const a = await graph.invoke(new Command({ resume: answer }), { configurable: { thread_id: from } });
          const b = await graph.invoke(new Command({ resume: answer }), { configurable: { thread_id: to } });
          checkEqual(b, a, `${label}: the copy resumed with the same answer as the source`);
        }
      },
    },
    {
      name: "refuses a target that has checkpoints of its own, with CopyTargetNotEmptyError, and writes nothing",
      skipUnless: storesOnly,
      async run(ctx) {
        const { saver } = await open(ctx);
        const from = ctx.threadId("src");
        const to = ctx.threadId("dst");
        await fillThread(saver, from, "small");
        await putCheckpoint(saver, threadConfig(to), { own: "value" });
        const before = await everything(saver, to);
        const error = (await expectThrow(() => saver.copyThread(from, to), "copyThread into a used thread")) as { code?: string; message?: string };
        checkEqual(error.code, "COPY_TARGET_NOT_EMPTY", `the error's code (message: ${error.message})`);
        checkEqual(await everything(saver, to), before, "the target after the refused copy");
        await expectThrow(() => saver.copyThread(from, from), "copyThread onto itself");
      },
    },
    {
      name: "a copy cut short leaves every copied checkpoint whole, and a second copyThread completes it",
      skipUnless: storesOnly,
      async run(ctx) {
        const { saver, store } = await open(ctx);
        const graph = chat("delta", saver);
        const from = ctx.threadId("src");
        for (let i = 0; i < 6; i += 1) await graph.invoke({ messages: [question(i)] }, { configurable: { thread_id: from } });
        const full = await history(graph, from);
        for (const allowed of [1, 5, 11]) {
          const to = ctx.threadId(`dst-${allowed}`);
          const cut = new ResumableSaver(failingAfter(store, allowed));
          await expectThrow(() => cut.copyThread(from, to), `a copy that fails after ${allowed} checkpoints`);
          const partial = await history(chat("delta", new ResumableSaver(store)), to);
          checkEqual(partial.length, allowed, `checkpoints visible after a copy cut short after ${allowed}`);
          checkEqual(partial, full.slice(full.length - allowed), `the states a copy cut short after ${allowed} checkpoints shows`);
          const result = await saver.copyThread(from, to);
          checkEqual(result.alreadyCopied, allowed, "checkpoints the second copy found already copied");
          checkEqual(await history(graph, to), full, `the copy completed after being cut short after ${allowed}`);
        }
      },
    },
    {
      name: "the copy carries the source's status: interrupted with its interrupts, done, dead-lettered",
      skipUnless: (info) => storesOnly(info) ?? (info.capabilities.threadStatus ? undefined : "the store does not declare capabilities.threadStatus"),
      async run(ctx) {
        const { saver } = await open(ctx);
        const graph = approvalGraph(new Counter()).compile({ checkpointer: saver });
        const waiting = ctx.threadId("waiting");
        await graph.invoke({ log: ["start"] }, { configurable: { thread_id: waiting } });
        const finished = ctx.threadId("finished");
        await graph.invoke({ log: ["start"] }, { configurable: { thread_id: finished } });
        await graph.invoke(new Command({ resume: "yes" }), { configurable: { thread_id: finished } });
        const dead = ctx.threadId("dead");
        await graph.invoke({ log: ["start"] }, { configurable: { thread_id: dead } });
        const deadStatus = await saver.getThreadStatus(dead);
        check(deadStatus, "the thread to dead-letter has a status");
        await saver.updateThreadStatus(dead, { checkpointId: deadStatus.checkpointId, state: "dead", error: "gave up after 3 attempts" });
        for (const [thread, state] of [
          [waiting, "interrupted"],
          [finished, "done"],
          [dead, "dead"],
        ] as const) {
          const to = `${thread}-copy`;
          await saver.copyThread(thread, to);
          const source = await saver.getThreadStatus(thread);
          const copy = await saver.getThreadStatus(to);
          check(source && copy, `both ${thread} and its copy have a status`);
          checkEqual(source.state, state, `the source's state`);
          checkEqual(
            { state: copy.state, checkpointId: copy.checkpointId, error: copy.error, interrupts: copy.interrupts },
            { state: source.state, checkpointId: source.checkpointId, error: source.error, interrupts: source.interrupts },
            `the status of the copy of a ${state} thread`,
          );
          const listed = await saver.listThreads({ status: state, limit: 1000 });
          check(listed.threads.some((t) => t.threadId === to), `listThreads({ status: "${state}" }) lists the copy`);
        }
      },
    },
  ],
};
