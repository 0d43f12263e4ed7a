/**
 * The graph shapes the crash suite runs. Every node records its execution through {@link NodeEffects}
 * (so the checker can tell what was re-run), and one node per graph performs a side effect guarded by
 * an idempotency key (so the checker can tell whether it happened exactly once).
 *
 * @module
 */
import {
  Annotation,
  DeltaChannel,
  END,
  START,
  Send,
  StateGraph,
  interrupt,
  type BaseCheckpointSaver,
  type LangGraphRunnableConfig,
} from "@langchain/langgraph";

/** What a node may do besides computing its update; implemented by the child process. */
export interface NodeEffects {
  /** Records that a node started (appended to the execution log before anything else). */
  started(node: string, config: LangGraphRunnableConfig): void;
  /**
   * Performs the guarded side effect of this task: a ledger entry under the task's idempotency key,
   * at most once per key. The crash suite may kill the process right after it ("inside the node").
   */
  charge(node: string, config: LangGraphRunnableConfig): void;
}

/** The slice of a compiled graph the harness uses. */
export interface RunnableGraph {
  invoke(input: unknown, config: Record<string, unknown>): Promise<unknown>;
  getState(config: Record<string, unknown>): Promise<{
    values: unknown;
    next: string[];
    tasks: Array<{ interrupts?: unknown[] }>;
    config: { configurable?: Record<string, unknown> };
    metadata?: Record<string, unknown>;
  }>;
}

/** One graph shape of the crash suite. */
export interface CrashGraph {
  /** Short name used in the matrix (`linear`, `fanout`...). */
  name: string;
  description: string;
  /** The input of a run. */
  input: Record<string, unknown>;
  /** The value given to `Command({ resume })` when the graph waits on an interrupt. */
  resumeValue?: unknown;
  /** Nodes with a guarded side effect: the suite also kills the process inside them. */
  effectNodes: string[];
  build(checkpointer: BaseCheckpointSaver, fx: NodeEffects): RunnableGraph;
}

const append = <T>(a: T[], b: T | T[]): T[] => a.concat(b);

const linear: CrashGraph = {
  name: "linear",
  description: "a chain of three nodes; the middle one charges",
  input: { log: ["input"] },
  effectNodes: ["charge"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      log: Annotation<string[]>({ reducer: append, default: () => [] }),
      total: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
    });
    return new StateGraph(State)
      .addNode("lookup", (_s, config) => {
        fx.started("lookup", config);
        return { log: ["lookup"], total: 42 };
      })
      .addNode("charge", (s, config) => {
        fx.started("charge", config);
        fx.charge("charge", config);
        return { log: [`charge ${s.total}`] };
      })
      .addNode("email", (_s, config) => {
        fx.started("email", config);
        return { log: ["email"] };
      })
      .addEdge(START, "lookup")
      .addEdge("lookup", "charge")
      .addEdge("charge", "email")
      .addEdge("email", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

const fanout: CrashGraph = {
  name: "fanout",
  description: "three parallel siblings write different keys, then a join charges",
  input: { log: ["input"] },
  effectNodes: ["join"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      log: Annotation<string[]>({ reducer: append, default: () => [] }),
      left_out: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
      middle_out: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
      right_out: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
    });
    const sibling = (name: "left" | "middle" | "right") => (_s: unknown, config: LangGraphRunnableConfig) => {
      fx.started(name, config);
      return { [`${name}_out`]: `${name} done` };
    };
    return new StateGraph(State)
      .addNode("split", (_s, config) => {
        fx.started("split", config);
        return { log: ["split"] };
      })
      .addNode("left", sibling("left"))
      .addNode("middle", sibling("middle"))
      .addNode("right", sibling("right"))
      .addNode("join", (s, config) => {
        fx.started("join", config);
        fx.charge("join", config);
        return { log: [`join ${s.left_out}/${s.middle_out}/${s.right_out}`] };
      })
      .addEdge(START, "split")
      .addEdge("split", "left")
      .addEdge("split", "middle")
      .addEdge("split", "right")
      .addEdge(["left", "middle", "right"], "join")
      .addEdge("join", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

const sendMap: CrashGraph = {
  name: "send",
  description: "a Send map over three items; every worker charges its own item",
  input: { items: [1, 2, 3] },
  effectNodes: ["worker"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      items: Annotation<number[]>({ reducer: (_a, b) => b, default: () => [] }),
      results: Annotation<number[]>({ reducer: append, default: () => [] }),
      summary: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
    });
    return new StateGraph(State)
      .addNode("plan", (_s, config) => {
        fx.started("plan", config);
        return {};
      })
      .addNode("worker", (s, config) => {
        fx.started("worker", config);
        fx.charge("worker", config);
        return { results: s.items.map((item) => item * 10) };
      })
      .addNode("collect", (s, config) => {
        fx.started("collect", config);
        return { summary: [...s.results].sort((a, b) => a - b).join(",") };
      })
      .addEdge(START, "plan")
      .addConditionalEdges("plan", (s) => s.items.map((item) => new Send("worker", { items: [item] })))
      .addEdge("worker", "collect")
      .addEdge("collect", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

const interruptGraph: CrashGraph = {
  name: "interrupt",
  description: "an approval interrupt before a charge",
  input: { log: ["input"] },
  resumeValue: "approved",
  effectNodes: ["charge"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      log: Annotation<string[]>({ reducer: append, default: () => [] }),
    });
    return new StateGraph(State)
      .addNode("prepare", (_s, config) => {
        fx.started("prepare", config);
        return { log: ["prepare"] };
      })
      .addNode("approve", (_s, config) => {
        fx.started("approve", config);
        const decision = interrupt({ question: "refund 42?" });
        return { log: [`approve ${String(decision)}`] };
      })
      .addNode("charge", (_s, config) => {
        fx.started("charge", config);
        fx.charge("charge", config);
        return { log: ["charge"] };
      })
      .addNode("finish", (_s, config) => {
        fx.started("finish", config);
        return { log: ["finish"] };
      })
      .addEdge(START, "prepare")
      .addEdge("prepare", "approve")
      .addEdge("approve", "charge")
      .addEdge("charge", "finish")
      .addEdge("finish", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

const subgraph: CrashGraph = {
  name: "subgraph",
  description: "a two-node subgraph (its own checkpoint namespace), then a charge in the parent",
  input: { log: ["input"] },
  effectNodes: ["settle"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      log: Annotation<string[]>({ reducer: append, default: () => [] }),
      inner: Annotation<string[]>({ reducer: (_a, b) => b, default: () => [] }),
    });
    // The subgraph reads the parent's log and returns only its own key.
    const Inner = Annotation.Root({
      log: Annotation<string[]>({ reducer: (_a, b) => b, default: () => [] }),
      inner: Annotation<string[]>({ reducer: append, default: () => [] }),
    });
    const inner = new StateGraph({ stateSchema: Inner, input: Inner, output: Annotation.Root({ inner: Inner.spec.inner }) })
      .addNode("inner_a", (s: typeof Inner.State, config: LangGraphRunnableConfig) => {
        fx.started("inner_a", config);
        return { inner: [`inner_a saw ${s.log.length}`] };
      })
      .addNode("inner_b", (_s: typeof Inner.State, config: LangGraphRunnableConfig) => {
        fx.started("inner_b", config);
        return { inner: ["inner_b"] };
      })
      .addEdge(START, "inner_a")
      .addEdge("inner_a", "inner_b")
      .addEdge("inner_b", END)
      .compile();
    return new StateGraph(State)
      .addNode("prep", (_s, config) => {
        fx.started("prep", config);
        return { log: ["prep"] };
      })
      .addNode("sub", inner)
      .addNode("settle", (_s, config) => {
        fx.started("settle", config);
        fx.charge("settle", config);
        return { log: ["settle"] };
      })
      .addEdge(START, "prep")
      .addEdge("prep", "sub")
      .addEdge("sub", "settle")
      .addEdge("settle", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

const delta: CrashGraph = {
  name: "delta",
  description: "a DeltaChannel message list appended by a chain and two parallel nodes",
  input: { messages: ["user: refund please"] },
  effectNodes: ["reply"],
  build(checkpointer, fx) {
    const State = Annotation.Root({
      // Snapshots every two updates, so a resume exercises both a snapshot and replayed writes.
      messages: new DeltaChannel<string[], string | string[]>(
        (state, writes) => state.concat(writes.flatMap((w) => (Array.isArray(w) ? w : [w]))),
        { snapshotFrequency: 2, initialValueFactory: () => [] },
      ) as unknown as ReturnType<typeof Annotation<string[]>>,
    });
    const say = (node: string, text: string) => (_s: unknown, config: LangGraphRunnableConfig) => {
      fx.started(node, config);
      return { messages: [text] };
    };
    return new StateGraph(State)
      .addNode("greet", say("greet", "agent: hello"))
      .addNode("check_a", say("check_a", "tool: order found"))
      .addNode("check_b", say("check_b", "tool: policy ok"))
      .addNode("reply", (s: { messages: string[] }, config: LangGraphRunnableConfig) => {
        fx.started("reply", config);
        fx.charge("reply", config);
        return { messages: [`agent: refunded after ${s.messages.length} messages`] };
      })
      .addEdge(START, "greet")
      .addEdge("greet", "check_a")
      .addEdge("greet", "check_b")
      .addEdge(["check_a", "check_b"], "reply")
      .addEdge("reply", END)
      .compile({ checkpointer }) as unknown as RunnableGraph;
  },
};

/** Every graph shape, in the order the matrix lists them. */
export const CRASH_GRAPHS: readonly CrashGraph[] = [linear, fanout, sendMap, interruptGraph, subgraph, delta];

/** Looks a graph up by name, with an error that lists the names. */
export function crashGraph(name: string): CrashGraph {
  const graph = CRASH_GRAPHS.find((g) => g.name === name);
  if (!graph) {
    throw new Error(`Unknown crash graph "${name}"; the graphs are: ${CRASH_GRAPHS.map((g) => g.name).join(", ")}.`);
  }
  return graph;
}
