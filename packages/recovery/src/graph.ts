/**
 * What the runner needs of a compiled LangGraph.js graph, typed structurally so that this package
 * does not import `@langchain/langgraph` (any 1.x compiled graph fits), and the static-breakpoint
 * check that the thread status cannot make on its own.
 *
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type { ResumableSaver } from "@resumable/core";

/** The part of a compiled graph (`builder.compile()`, an `entrypoint`) the runner uses. */
export interface RecoverableGraph {
  invoke(input: unknown, config?: RunnableConfig): Promise<unknown>;
  getState(config: RunnableConfig): Promise<{
    next: readonly string[];
    tasks?: ReadonlyArray<{ interrupts?: readonly unknown[] }>;
    config?: RunnableConfig;
  }>;
  /** Static breakpoints the graph was compiled with (`compile({ interruptBefore })`). */
  interruptBefore?: readonly string[] | "*" | undefined;
}

/**
 * The graph with `saver` as its checkpointer, for one resume: a view whose prototype is the compiled
 * graph, so nothing of it is copied, and its subgraphs get the saver the usual way (the parent lends
 * its checkpointer to them).
 */
export function leasedGraph<G extends RecoverableGraph>(graph: G, saver: ResumableSaver): G {
  return Object.create(graph, { checkpointer: { value: saver, writable: true, enumerable: true, configurable: true } }) as G;
}

/**
 * When the thread's latest checkpoint stopped at a static breakpoint (`interruptBefore`), the nodes
 * it stopped before; otherwise `undefined`. LangGraph writes nothing at a breakpoint, so the saver
 * sees a checkpoint with tasks left (`"pending"`); resuming it with `invoke(null)` would run past the
 * breakpoint, so the runner leaves it to a person. The rule is LangGraph's `shouldInterrupt`: a next
 * node is a breakpoint and a channel changed since the last interrupt was answered.
 */
export async function breakpointOf(graph: RecoverableGraph, saver: ResumableSaver, config: RunnableConfig): Promise<{ interruptBefore: string[] } | undefined> {
  const before = graph.interruptBefore;
  if (before === undefined || (Array.isArray(before) && before.length === 0)) return undefined;
  const tuple = await saver.getTuple(config);
  if (!tuple) return undefined;
  const state = await leasedGraph(graph, saver).getState(config);
  const nodes = before === "*" ? [...state.next] : state.next.filter((node) => before.includes(node));
  if (nodes.length === 0) return undefined;
  const seen = (tuple.checkpoint.versions_seen?.["__interrupt__"] ?? {}) as Record<string, number | string>;
  const changed = Object.entries(tuple.checkpoint.channel_versions ?? {}).some(([channel, version]) => seen[channel] === undefined || version > seen[channel]!);
  return changed ? { interruptBefore: nodes } : undefined;
}
