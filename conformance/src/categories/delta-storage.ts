import { AIMessage, HumanMessage, RemoveMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, DeltaChannel, END, MessagesAnnotation, START, StateGraph, messagesDeltaReducer } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

import { check, checkEqual, collect, show } from "../helpers.js";
import type { Category, CheckContext } from "../types.js";

/** A message as a user sees it: class, id, content. */
function view(m: unknown): unknown {
  const msg = m as BaseMessage;
  return { class: msg.constructor?.name, id: msg.id, content: msg.content };
}

type Kind = "plain" | "delta";

const DeltaMessages = Annotation.Root({
  messages: () =>
    new DeltaChannel<BaseMessage[], unknown>(messagesDeltaReducer as (state: BaseMessage[], writes: unknown[]) => BaseMessage[], {
      snapshotFrequency: 3,
    }),
});

/** A chat graph: the assistant answers with a message whose id and text follow from the list. */
function chat(kind: Kind, checkpointer: BaseCheckpointSaver) {
  const assistant = (state: { messages: BaseMessage[] }) => {
    const n = state.messages.length;
    return { messages: [new AIMessage({ content: `answer ${n}: ${"lorem ipsum ".repeat(40)}`, id: `ai-${n}` })] };
  };
  const annotation = kind === "plain" ? MessagesAnnotation : DeltaMessages;
  return new StateGraph(annotation as typeof MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer });
}

const user = (i: number, tag = "") => new HumanMessage({ content: `question ${i}${tag}: ${"dolor sit amet ".repeat(30)}`, id: `user-${i}${tag}` });

/** Every checkpoint of a thread, newest first, as a user reads it through the graph. */
async function history(graph: ReturnType<typeof chat>, thread: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const snapshot of graph.getStateHistory({ configurable: { thread_id: thread } })) {
    out.push({ step: snapshot.metadata?.step, source: snapshot.metadata?.source, messages: ((snapshot.values as { messages?: unknown[] }).messages ?? []).map(view) });
  }
  return out;
}

/**
 * Runs the same operations on the subject and on LangGraph's MemorySaver (which stores every value
 * whole) and compares, at the end, the whole history of every thread as a user reads it.
 */
async function againstMemorySaver(
  ctx: CheckContext,
  kind: Kind,
  script: (run: (op: (graph: ReturnType<typeof chat>, thread: string) => Promise<unknown>) => Promise<void>) => Promise<void>,
): Promise<void> {
  const opened = await ctx.open();
  const subject = chat(kind, opened.saver);
  const oracle = chat(kind, new MemorySaver());
  const thread = ctx.threadId(kind);
  await script(async (op) => {
    await op(oracle, thread);
    await op(subject, thread);
  });
  const want = await history(oracle, thread);
  checkEqual(await history(subject, thread), want, `the ${kind} thread's history, every checkpoint, against MemorySaver`);
  // A fresh saver over the same data (a new process) reads the same.
  checkEqual(await history(chat(kind, ctx.reopen(opened)), thread), want, `the ${kind} thread's history read by a fresh saver`);
}

/** The config of the checkpoint `back` steps before the newest. */
async function olderCheckpoint(graph: ReturnType<typeof chat>, thread: string, back: number): Promise<RunnableConfig> {
  const all = await collect(graph.getStateHistory({ configurable: { thread_id: thread } }));
  const snapshot = all[back];
  check(snapshot, `the thread has no checkpoint ${back} steps back (it has ${all.length})`);
  return snapshot.config;
}

const turns = (n: number) => async (graph: ReturnType<typeof chat>, thread: string) => {
  for (let i = 0; i < n; i += 1) await graph.invoke({ messages: [user(i)] }, { configurable: { thread_id: thread } });
};

/**
 * Core stores a list channel as the elements it gained and shares large messages between the values
 * that hold them; whatever a graph does to its list (forks, updateState on an old checkpoint,
 * RemoveMessage, replacing a message by id, DeltaChannel snapshots), every checkpoint must read back
 * exactly as LangGraph's own MemorySaver, which stores every value whole, reads it.
 */
export const deltaStorage: Category = {
  id: "delta-storage",
  title: "Delta and shared storage read back exactly",
  description:
    "With list channels stored as deltas and messages stored once per thread, forks, time travel, updateState on an old checkpoint, RemoveMessage, message replacement by id and DeltaChannel snapshots give, at every checkpoint, exactly what MemorySaver gives.",
  checks: [
    ...(["plain", "delta"] as const).flatMap((kind) => [
      {
        name: `${kind === "plain" ? "a message list" : "a DeltaChannel"}: a long thread reads back exactly at every checkpoint`,
        run: (ctx: CheckContext) => againstMemorySaver(ctx, kind, (run) => run(turns(8))),
      },
      {
        name: `${kind === "plain" ? "a message list" : "a DeltaChannel"}: time travel and updateState on an old checkpoint fork exactly`,
        run: (ctx: CheckContext) =>
          againstMemorySaver(ctx, kind, async (run) => {
            await run(turns(4));
            // Replay from an old checkpoint with a new input: a fork whose list extends an old value.
            await run(async (graph, thread) => {
              const old = await olderCheckpoint(graph, thread, 6);
              await graph.invoke({ messages: [user(90, "-fork")] }, old);
            });
            // updateState on an old checkpoint, then continue from the new branch.
            await run(async (graph, thread) => {
              const old = await olderCheckpoint(graph, thread, 9);
              const branch = await graph.updateState(old, { messages: [user(91, "-update")] });
              await graph.invoke({ messages: [user(92, "-after-update")] }, branch);
            });
            await run(turns(1));
          }),
      },
      {
        name: `${kind === "plain" ? "a message list" : "a DeltaChannel"}: RemoveMessage and replacing a message by id read back exactly`,
        run: (ctx: CheckContext) =>
          againstMemorySaver(ctx, kind, async (run) => {
            await run(turns(3));
            await run(async (graph, thread) => {
              await graph.updateState({ configurable: { thread_id: thread } }, { messages: [new RemoveMessage({ id: "user-1" })] });
            });
            await run(turns(1));
            await run(async (graph, thread) => {
              const replaced = new HumanMessage({ content: `question 0, edited: ${"x".repeat(500)}`, id: "user-0" });
              await graph.updateState({ configurable: { thread_id: thread } }, { messages: [replaced] });
            });
            await run(async (graph, thread) => {
              await graph.invoke({ messages: [user(7)] }, { configurable: { thread_id: thread } });
            });
          }),
      },
    ]),
    {
      name: "delta storage is on: a message list that grew is stored as the elements it gained",
      skipUnless: (info) =>
        info.kind !== "store"
          ? "the factory returns a saver; how it stores values is its own"
          : info.capabilities.deltaRanges
            ? undefined
            : "the store does not declare capabilities.deltaRanges, so core stores every value whole",
      async run(ctx) {
        const opened = await ctx.open();
        const thread = ctx.threadId();
        await turns(3)(chat("plain", opened.saver), thread);
        const stored = await opened.store!.getCheckpoint({ threadId: thread, checkpointNs: "" });
        check(stored, "the thread's newest checkpoint is missing");
        const version = stored.record.channelVersions.messages;
        const blob = stored.blobs.find((b) => b.channel === "messages" && b.version === version);
        check(blob, `the messages blob at version ${version} is missing (blobs: ${show(stored.blobs.map((b) => `${b.channel}@${b.version}`))})`);
        check(blob.baseVersion !== undefined, "the newest messages blob is stored whole, not as a delta over its parent's");
        checkEqual(stored.record.deltaRoots?.messages !== undefined, true, "the checkpoint names the root of the messages chain");
      },
    },
  ],
};
