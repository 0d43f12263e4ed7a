/**
 * Real LangGraph.js graphs the graph and durability categories run on the subject, each counting how
 * often its nodes execute so that a check can tell a resumed node from a re-run one.
 *
 * @module
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import {
  Annotation,
  Command,
  DeltaChannel,
  END,
  START,
  Send,
  StateGraph,
  entrypoint,
  interrupt,
  messagesDeltaReducer,
  task,
} from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

const concat = <T>(a: T[], b: T[] | T): T[] => a.concat(b);

const LogState = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
});

/** Counts node executions by name. */
export class Counter {
  readonly counts: Record<string, number> = {};
  hit(name: string): number {
    this.counts[name] = (this.counts[name] ?? 0) + 1;
    return this.counts[name]!;
  }
  of(name: string): number {
    return this.counts[name] ?? 0;
  }
}

/** A deferred promise, to make a failing branch wait until its siblings are done. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** prepare → approve (interrupts for an answer) → finish. */
export function approvalGraph(counter: Counter) {
  return new StateGraph(LogState)
    .addNode("prepare", () => {
      counter.hit("prepare");
      return { log: ["prepared"] };
    })
    .addNode("approve", () => {
      counter.hit("approve");
      const answer = interrupt<string, string>("approve the refund?");
      return { log: [`approved:${answer}`] };
    })
    .addNode("finish", () => {
      counter.hit("finish");
      return { log: ["finished"] };
    })
    .addEdge(START, "prepare")
    .addEdge("prepare", "approve")
    .addEdge("approve", "finish")
    .addEdge("finish", END);
}

/**
 * Three parallel branches then a join; `flaky` throws (after its siblings finished) while
 * `shouldFail()` is true.
 */
export function parallelGraph(counter: Counter, shouldFail: () => boolean) {
  let siblings = deferred();
  let done = 0;
  const sibling = (name: string) => () => {
    counter.hit(name);
    done += 1;
    if (done % 2 === 0) siblings.resolve();
    return { log: [name] };
  };
  return new StateGraph(LogState)
    .addNode("ok1", sibling("ok1"))
    .addNode("ok2", sibling("ok2"))
    .addNode("flaky", async () => {
      counter.hit("flaky");
      if (shouldFail()) {
        await siblings.promise;
        siblings = deferred();
        throw new Error("flaky branch failed on purpose");
      }
      return { log: ["flaky"] };
    })
    .addNode("join", () => {
      counter.hit("join");
      return { log: ["joined"] };
    })
    .addEdge(START, "ok1")
    .addEdge(START, "ok2")
    .addEdge(START, "flaky")
    .addEdge("ok1", "join")
    .addEdge("ok2", "join")
    .addEdge("flaky", "join")
    .addEdge("join", END);
}

const FanState = Annotation.Root({
  items: Annotation<number[]>(),
  results: Annotation<number[]>({ reducer: concat, default: () => [] }),
});

/** `Send` fan-out: one `work` task per item; item `failing` throws (after the others finished) while `shouldFail()`. */
export function fanOutGraph(counter: Counter, failing: number, shouldFail: () => boolean, total: number) {
  let others = deferred();
  let done = 0;
  return new StateGraph(FanState)
    .addNode("work", async (input: { item?: number }) => {
      const item = input.item as number;
      counter.hit(`work-${item}`);
      if (item === failing && shouldFail()) {
        await others.promise;
        others = deferred();
        throw new Error(`work item ${item} failed on purpose`);
      }
      done += 1;
      if (done === total - 1) others.resolve();
      return { results: [item * 10] };
    })
    .addNode("collect", () => {
      counter.hit("collect");
      return {};
    })
    .addConditionalEdges(START, (state: typeof FanState.State) => state.items.map((item) => new Send("work", { item })))
    .addEdge("work", "collect")
    .addEdge("collect", END);
}

const ParentState = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
  inner: Annotation<string[]>({ reducer: concat, default: () => [] }),
});
const InnerState = Annotation.Root({
  inner: Annotation<string[]>({ reducer: concat, default: () => [] }),
});

/** A parent graph whose middle node is a subgraph that interrupts; the subgraph keeps its own key. */
export function subgraphGraph(counter: Counter) {
  const inner = new StateGraph(InnerState)
    .addNode("inner_first", () => {
      counter.hit("inner_first");
      return { inner: ["inner_first"] };
    })
    .addNode("inner_ask", () => {
      counter.hit("inner_ask");
      const answer = interrupt<string, string>("inner question");
      return { inner: [`inner_answer:${answer}`] };
    })
    .addEdge(START, "inner_first")
    .addEdge("inner_first", "inner_ask")
    .addEdge("inner_ask", END)
    .compile();
  return new StateGraph(ParentState)
    .addNode("before", () => {
      counter.hit("before");
      return { log: ["before"] };
    })
    .addNode("sub", inner)
    .addNode("after", () => {
      counter.hit("after");
      return { log: ["after"] };
    })
    .addEdge(START, "before")
    .addEdge("before", "sub")
    .addEdge("sub", "after")
    .addEdge("after", END);
}

/** a → b → c, each appending its name. */
export function chainGraph(counter: Counter) {
  const node = (name: string) => () => {
    counter.hit(name);
    return { log: [name] };
  };
  return new StateGraph(LogState)
    .addNode("a", node("a"))
    .addNode("b", node("b"))
    .addNode("c", node("c"))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addEdge("b", "c")
    .addEdge("c", END);
}

/** a → b → c, each appending its name; b first awaits `pause()` (to stall a run at a chosen point). */
export function pausingChainGraph(counter: Counter, pause: () => Promise<void>) {
  const node = (name: string) => () => {
    counter.hit(name);
    return { log: [name] };
  };
  return new StateGraph(LogState)
    .addNode("a", node("a"))
    .addNode("b", async () => {
      counter.hit("b");
      await pause();
      return { log: ["b"] };
    })
    .addNode("c", node("c"))
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addEdge("b", "c")
    .addEdge("c", END);
}

/** A functional-API workflow: a task, an interrupt, the task again on another input. */
export function functionalWorkflow(counter: Counter, checkpointer: BaseCheckpointSaver) {
  const double = task("double", async (x: number) => {
    counter.hit(`double(${x})`);
    return x * 2;
  });
  return entrypoint({ name: "workflow", checkpointer }, async (x: number) => {
    const first = await double(x);
    const answer = interrupt<string, string>("continue?");
    const second = await double(first);
    return { first, second, answer };
  });
}

/** One node that answers each human message, on a `DeltaChannel` message list. */
export function deltaMessagesGraph(counter: Counter) {
  const MessagesState = Annotation.Root({
    // DeltaChannel stores the list as the writes that built it, plus a snapshot every third update.
    messages: new DeltaChannel(messagesDeltaReducer, { snapshotFrequency: 3 }) as unknown as ReturnType<typeof Annotation<BaseMessage[]>>,
  });
  return new StateGraph(MessagesState)
    .addNode("respond", (state: { messages: BaseMessage[] }) => {
      const n = counter.hit("respond");
      const last = state.messages[state.messages.length - 1];
      return { messages: [new AIMessage({ content: `reply ${n} to ${String(last?.content)}`, id: `ai-${n}` })] };
    })
    .addEdge(START, "respond")
    .addEdge("respond", END);
}

export { Command, HumanMessage };
