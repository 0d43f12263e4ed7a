/**
 * The graphs the benchmark runs: a chat thread (one node answering each user turn) with its messages
 * in a plain reducer channel or a `DeltaChannel`, and a chain of trivial nodes for step latency.
 *
 * @module
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import {
  Annotation,
  DeltaChannel,
  END,
  MessagesAnnotation,
  START,
  StateGraph,
  messagesDeltaReducer,
  type BaseCheckpointSaver,
} from "@langchain/langgraph";
import type { Turn } from "./payload.js";

/**
 * How the message list is stored: re-serialized whole at every step (`plain`), as deltas with
 * `DeltaChannel`'s default snapshot cadence (`delta`: a full snapshot every 100 updates, so every 50
 * turns here), or as deltas with no snapshot within the thread (`delta-nosnap`: the longest replay,
 * what `getState` must gather when the last snapshot is far back). The `delta-nosnap` thread is
 * written by {@link conversationGraph}, many turns per run, because LangGraph's default
 * `getDeltaChannelHistory` would otherwise walk the whole chain before every turn.
 */
export type StateKind = "plain" | "delta" | "delta-nosnap";

/** Human names of the state kinds, for tables and charts. */
export const STATE_LABEL: Record<StateKind, string> = {
  plain: "plain reducer",
  delta: "DeltaChannel",
  "delta-nosnap": "DeltaChannel, no snapshot",
};

const reducer = messagesDeltaReducer as (state: BaseMessage[], writes: unknown[]) => BaseMessage[];

const DeltaMessagesAnnotation = Annotation.Root({
  messages: () => new DeltaChannel<BaseMessage[], unknown>(reducer),
});

/** Snapshots far beyond the longest thread: every read replays the whole history. */
const NO_SNAPSHOT = 1_000_000;

const UnsnapshottedMessagesAnnotation = Annotation.Root({
  messages: () => new DeltaChannel<BaseMessage[], unknown>(reducer, { snapshotFrequency: NO_SNAPSHOT }),
});

/** The user's message of turn `index`, with a stable id so every backend stores the same bytes. */
export function userMessage(turn: Turn, index: number): HumanMessage {
  return new HumanMessage({ content: turn.user, id: `user-${index}` });
}

/**
 * A one-node chat graph whose assistant answers turn `i` with `turns[i].assistant`. The node reads
 * the turn number from the message count, so replaying a thread gives the same answers.
 */
export function chatGraph(kind: StateKind, turns: readonly Turn[], checkpointer: BaseCheckpointSaver | undefined) {
  const assistant = (state: { messages: BaseMessage[] }) => {
    const index = Math.floor(state.messages.length / 2);
    const turn = turns[index];
    if (!turn) throw new Error(`no assistant text for turn ${index}`);
    return { messages: [new AIMessage({ content: turn.assistant, id: `assistant-${index}` })] };
  };
  const annotation = kind === "plain" ? MessagesAnnotation : kind === "delta" ? DeltaMessagesAnnotation : UnsnapshottedMessagesAnnotation;
  return new StateGraph(annotation as typeof MessagesAnnotation)
    .addNode("assistant", assistant)
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile(checkpointer ? { checkpointer } : {});
}

/**
 * A conversation written many turns per run: `user` and `assistant` nodes alternate until the thread
 * holds `target()` turns, each step checkpointed. Messages have the same ids and text as in
 * {@link chatGraph}; there is one checkpoint per message instead of three per turn, and no input
 * checkpoint per turn.
 */
export function conversationGraph(turns: readonly Turn[], target: () => number, checkpointer: BaseCheckpointSaver) {
  const user = (state: { messages: BaseMessage[] }) => {
    const index = Math.floor(state.messages.length / 2);
    return { messages: [userMessage(turns[index]!, index)] };
  };
  const assistant = (state: { messages: BaseMessage[] }) => {
    const index = Math.floor(state.messages.length / 2);
    return { messages: [new AIMessage({ content: turns[index]!.assistant, id: `assistant-${index}` })] };
  };
  const next = (state: { messages: BaseMessage[] }) => (state.messages.length / 2 < target() ? "user" : END);
  return new StateGraph(UnsnapshottedMessagesAnnotation as unknown as typeof MessagesAnnotation)
    .addNode("user", user)
    .addNode("assistant", assistant)
    .addEdge(START, "user")
    .addEdge("user", "assistant")
    .addConditionalEdges("assistant", next, ["user", END])
    .compile({ checkpointer });
}

const ChainState = Annotation.Root({
  payload: Annotation<string>(),
  step: Annotation<number>(),
});

/** Number of nodes (and so of steps) in the latency chain. */
export const CHAIN_LENGTH = 20;

/** What the latency benchmark calls on a compiled chain. */
export interface ChainRunnable {
  invoke(input: { payload: string; step: number }, config: { configurable?: Record<string, unknown>; durability?: "exit" | "async" | "sync" }): Promise<unknown>;
}

/**
 * A chain of {@link CHAIN_LENGTH} nodes, each writing only its step number: the payload set by the
 * input rides along unchanged, as most of a real state does from one step to the next.
 */
export function chainGraph(checkpointer: BaseCheckpointSaver | undefined): ChainRunnable {
  // The builder's types track node names; a loop of dynamic names needs an untyped view of it.
  const builder = new StateGraph(ChainState) as unknown as {
    addNode(name: string, fn: () => { step: number }): void;
    addEdge(from: string, to: string): void;
    compile(options: { checkpointer?: BaseCheckpointSaver }): ChainRunnable;
  };
  for (let i = 0; i < CHAIN_LENGTH; i += 1) builder.addNode(`n${i}`, () => ({ step: i }));
  builder.addEdge(START, "n0");
  for (let i = 1; i < CHAIN_LENGTH; i += 1) builder.addEdge(`n${i - 1}`, `n${i}`);
  builder.addEdge(`n${CHAIN_LENGTH - 1}`, END);
  return builder.compile(checkpointer ? { checkpointer } : {});
}
