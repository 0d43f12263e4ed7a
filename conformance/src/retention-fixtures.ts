/**
 * Chat threads the retention checks and the retention crash sweep build: a plain message list (which
 * the saver stores as delta chains), a `DeltaChannel` message list with and without snapshots, and a
 * parent graph whose answers come from a subgraph (checkpoints in a namespace of their own), plus the
 * views a check compares before and after.
 *
 * @module
 */
import { AIMessage, HumanMessage, isBaseMessage, type BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, DeltaChannel, END, MessagesAnnotation, START, StateGraph, messagesDeltaReducer } from "@langchain/langgraph";
import { isDeltaSnapshot, type BaseCheckpointSaver, type CheckpointTuple } from "@langchain/langgraph-checkpoint";

/**
 * The state kinds retention must keep whole: `plain` (a `MessagesAnnotation` list), `delta` (a
 * `DeltaChannel` list with a snapshot every third update), `delta-no-snapshot` (a `DeltaChannel` whose
 * snapshot frequency is never reached: every value is rebuilt from the thread's first write on), and
 * `subgraph` (a plain list whose answers a two-node subgraph writes, in its own namespace).
 */
export type ChatKind = "plain" | "delta" | "delta-no-snapshot" | "subgraph";

export const CHAT_KINDS: readonly ChatKind[] = Object.freeze(["plain", "delta", "delta-no-snapshot", "subgraph"]);

/** A compiled chat graph, as the checks drive it. */
export interface ChatGraph {
  invoke(input: unknown, config: RunnableConfig): Promise<unknown>;
  getState(config: RunnableConfig): Promise<{ values: unknown; next: unknown; tasks: unknown[]; config: RunnableConfig }>;
}

const deltaState = (snapshotFrequency: number) =>
  Annotation.Root({
    messages: () =>
      new DeltaChannel<BaseMessage[], unknown>(messagesDeltaReducer as (state: BaseMessage[], writes: unknown[]) => BaseMessage[], { snapshotFrequency }),
  });

/** An answer long enough to be stored as a shared piece (referenced, not repeated). */
function answer(n: number, from: string): AIMessage {
  return new AIMessage({ content: `${from} answer ${n}: ${"lorem ipsum ".repeat(30)}`, id: `${from}-${n}` });
}

/** A chat graph of one kind on `saver`. */
export function chatGraph(kind: ChatKind, saver: BaseCheckpointSaver): ChatGraph {
  const assistant = (state: { messages: BaseMessage[] }) => ({ messages: [answer(state.messages.length, "ai")] });
  if (kind === "subgraph") {
    const team = new StateGraph(MessagesAnnotation)
      .addNode("draft", (state: { messages: BaseMessage[] }) => ({ messages: [answer(state.messages.length, "draft")] }))
      .addNode("review", (state: { messages: BaseMessage[] }) => ({ messages: [answer(state.messages.length, "review")] }))
      .addEdge(START, "draft")
      .addEdge("draft", "review")
      .addEdge("review", END)
      .compile();
    return new StateGraph(MessagesAnnotation).addNode("team", team).addEdge(START, "team").addEdge("team", END).compile({ checkpointer: saver }) as unknown as ChatGraph;
  }
  const state = kind === "plain" ? MessagesAnnotation : deltaState(kind === "delta" ? 3 : 1_000_000);
  return new StateGraph(state as typeof MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer: saver }) as unknown as ChatGraph;
}

/**
 * One graph with every storage form retention must respect at once: `messages` (a plain list, stored
 * as delta chains with shared pieces) and `notes` (a `DeltaChannel` that snapshots every second
 * update, rebuilt from its ancestors' writes in between). The crash sweep prunes and copies its threads.
 */
export function mixedChatGraph(saver: BaseCheckpointSaver): ChatGraph {
  const State = Annotation.Root({
    ...MessagesAnnotation.spec,
    notes: () => new DeltaChannel<BaseMessage[], unknown>(messagesDeltaReducer as (state: BaseMessage[], writes: unknown[]) => BaseMessage[], { snapshotFrequency: 2 }),
  });
  return new StateGraph(State)
    .addNode("assistant", (state: { messages: BaseMessage[] }) => ({
      messages: [answer(state.messages.length, "ai")],
      notes: [new AIMessage({ content: `note ${state.messages.length}`, id: `note-${state.messages.length}` })],
    }))
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer: saver }) as unknown as ChatGraph;
}

/** The i-th user message; long enough to be stored as a shared piece. */
export function question(i: number): HumanMessage {
  return new HumanMessage({ content: `question ${i}: ${"dolor sit amet ".repeat(30)}`, id: `user-${i}` });
}

/** Runs turns `from` to `to - 1` of a chat, each as its own run (`metadata.run_id` = `<runPrefix>-<i>`). */
export async function chatTurns(graph: ChatGraph, threadId: string, from: number, to: number, runPrefix = "run"): Promise<void> {
  for (let i = from; i < to; i += 1) {
    await graph.invoke({ messages: [question(i)] }, { configurable: { thread_id: threadId }, metadata: { run_id: `${runPrefix}-${i}` } });
  }
}

/** A message reduced to what identifies it (class, id, content); anything else as it is. */
function messageOf(value: unknown): unknown {
  return isBaseMessage(value) ? { class: value.constructor?.name, id: value.id, content: value.content } : value;
}

/** A channel value with messages reduced to what identifies them (inside a `DeltaSnapshot` too). */
function valueOf(value: unknown): unknown {
  if (isDeltaSnapshot(value)) return { snapshot: valueOf((value as { value: unknown }).value) };
  return Array.isArray(value) ? value.map(messageOf) : messageOf(value);
}

/** A state's values (or channel values) with messages reduced to what identifies them, for comparisons. */
export function messageView(values: unknown): unknown {
  if (values === null || typeof values !== "object" || Array.isArray(values)) return values;
  return Object.fromEntries(Object.entries(values).map(([key, value]) => [key, valueOf(value)]));
}

/** A tuple as a user reads it through `getTuple` and `list`: everything but object identity. */
export function tupleView(tuple: CheckpointTuple): unknown {
  return {
    thread: tuple.config.configurable?.thread_id,
    ns: tuple.config.configurable?.checkpoint_ns,
    id: tuple.checkpoint.id,
    parent: tuple.parentConfig?.configurable?.checkpoint_id,
    checkpoint: { ...tuple.checkpoint, channel_values: messageView(tuple.checkpoint.channel_values) },
    metadata: tuple.metadata,
    writes: tuple.pendingWrites?.map(([task, channel, value]) => [task, channel, valueOf(value)]),
  };
}

/** Every checkpoint of a thread in every namespace, through `list`, keyed `ns\0id`. */
export async function everyTuple(saver: BaseCheckpointSaver, threadId: string): Promise<Map<string, CheckpointTuple>> {
  const out = new Map<string, CheckpointTuple>();
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    out.set(`${tuple.config.configurable?.checkpoint_ns ?? ""}\u0000${tuple.checkpoint.id}`, tuple);
  }
  return out;
}

/**
 * The graph state at a root checkpoint, as `getState` rebuilds it (DeltaChannel values from their
 * history included).
 */
export async function stateAt(graph: ChatGraph, threadId: string, checkpointId: string): Promise<unknown> {
  const state = await graph.getState({ configurable: { thread_id: threadId, checkpoint_id: checkpointId } });
  return { values: messageView(state.values), next: state.next, tasks: state.tasks.length };
}
