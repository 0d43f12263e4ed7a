// The saver tells pending from done from the checkpoint alone (hasPendingTasks). LangGraph.js decides
// the same thing from the same checkpoint plus the graph; at every checkpoint of every run below the
// two must agree: hasPendingTasks(checkpoint) === (graph.getState(config).next.length > 0).
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
import type { RunnableConfig } from "@langchain/core/runnables";
import { describe, expect, it } from "vitest";

import { MemoryStore, ResumableSaver, hasPendingTasks } from "../src/index.js";

const concat = <T>(a: T[], b: T[] | T): T[] => a.concat(b);
const Log = Annotation.Root({
  log: Annotation<string[]>({ reducer: concat, default: () => [] }),
  n: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  items: Annotation<number[]>({ reducer: (_a, b) => b, default: () => [] }),
});

type Runnable = {
  getState(config: RunnableConfig): Promise<{ next: string[] }>;
};

let seq = 0;
const config = (label: string): RunnableConfig => ({ configurable: { thread_id: `${label}-${++seq}` } });

/** Every root checkpoint of the thread: the saver's rule against the graph's own view. */
async function agreeEverywhere(saver: ResumableSaver, graph: Runnable, cfg: RunnableConfig): Promise<number> {
  let compared = 0;
  for await (const tuple of saver.list({ configurable: { thread_id: cfg.configurable!.thread_id, checkpoint_ns: "" } })) {
    const snapshot = await graph.getState(tuple.config);
    const expected = snapshot.next.length > 0;
    expect(
      hasPendingTasks(tuple.checkpoint),
      `checkpoint ${tuple.checkpoint.id} (step ${tuple.metadata?.step}, source ${tuple.metadata?.source}): the graph says next = ${JSON.stringify(snapshot.next)}`,
    ).toBe(expected);
    compared += 1;
  }
  return compared;
}

describe("hasPendingTasks agrees with LangGraph's getState().next at every checkpoint", () => {
  it("a chain, with a loop through a conditional edge", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const graph = new StateGraph(Log)
      .addNode("a", () => ({ log: ["a"] }))
      .addNode("loop", (s) => ({ n: s.n + 1, log: [`loop${s.n}`] }))
      .addNode("end", () => ({ log: ["end"] }))
      .addEdge(START, "a")
      .addEdge("a", "loop")
      .addConditionalEdges("loop", (s) => (s.n < 3 ? "loop" : "end"), ["loop", "end"])
      .addEdge("end", END)
      .compile({ checkpointer: saver });
    const cfg = config("loop");
    await graph.invoke({}, cfg);
    await graph.invoke({ n: 0 }, cfg); // a second run on the same thread
    expect(await agreeEverywhere(saver, graph, cfg)).toBeGreaterThan(10);
  });

  it("Send fan-out, a join of two branches, Command goto and a deferred node", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const graph = new StateGraph(Log)
      .addNode("fan", (s) => ({ log: [`fan${s.items[0]}`] }))
      .addNode("left", () => ({ log: ["left"] }))
      .addNode("right", () => ({ log: ["right"] }))
      .addNode("joined", () => new Command({ goto: "after", update: { log: ["joined"] } }), { ends: ["after"] })
      .addNode("after", () => ({ log: ["after"] }))
      .addNode("late", () => ({ log: ["late"] }), { defer: true })
      .addConditionalEdges(START, (s) => s.items.map((i) => new Send("fan", { ...s, items: [i] })), ["fan"])
      .addEdge("fan", "left")
      .addEdge("fan", "right")
      .addEdge(["left", "right"], "joined")
      .addEdge("after", "late")
      .addEdge("late", END)
      .compile({ checkpointer: saver });
    const cfg = config("shapes");
    const out = await graph.invoke({ items: [1, 2, 3] }, cfg);
    expect(out.log).toContain("late");
    expect(await agreeEverywhere(saver, graph, cfg)).toBeGreaterThan(5);
  });

  it("a failed node, then its successful retry", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    let fail = true;
    const graph = new StateGraph(Log)
      .addNode("a", () => ({ log: ["a"] }))
      .addNode("b", () => {
        if (fail) throw new Error("b failed");
        return { log: ["b"] };
      })
      .addEdge(START, "a")
      .addEdge("a", "b")
      .addEdge("b", END)
      .compile({ checkpointer: saver });
    const cfg = config("fail");
    await expect(graph.invoke({}, cfg)).rejects.toThrow("b failed");
    await agreeEverywhere(saver, graph, cfg);
    fail = false;
    await graph.invoke(null, cfg);
    await agreeEverywhere(saver, graph, cfg);
  });

  it("an interrupt, a subgraph interrupt, their resumes, and a static interruptBefore", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const inner = new StateGraph(Log)
      .addNode("i1", () => ({ log: ["i1"] }))
      .addNode("ask", () => ({ log: [String(interrupt("inner?"))] }))
      .addEdge(START, "i1")
      .addEdge("i1", "ask")
      .addEdge("ask", END)
      .compile();
    const graph = new StateGraph(Log)
      .addNode("approve", () => ({ log: [String(interrupt("approve?"))] }))
      .addNode("sub", inner)
      .addNode("final", () => ({ log: ["final"] }))
      .addEdge(START, "approve")
      .addEdge("approve", "sub")
      .addEdge("sub", "final")
      .addEdge("final", END)
      .compile({ checkpointer: saver, interruptBefore: ["final"] });
    const cfg = config("interrupts");
    await graph.invoke({}, cfg);
    await graph.invoke(new Command({ resume: "yes" }), cfg);
    await graph.invoke(new Command({ resume: "fine" }), cfg);
    expect((await graph.getState(cfg)).next).toEqual(["final"]);
    await graph.invoke(null, cfg);
    expect((await graph.getState(cfg)).next).toEqual([]);
    expect(await agreeEverywhere(saver, graph, cfg)).toBeGreaterThanOrEqual(5);
  });

  it("the functional API: tasks, an interrupt inside the entrypoint, the resume", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const double = task("double", async (x: number) => x * 2);
    const workflow = entrypoint({ name: "workflow", checkpointer: saver }, async (x: number) => {
      const a = await double(x);
      const answer = interrupt("go?");
      return { a, b: await double(a), answer };
    });
    const cfg = config("functional");
    await workflow.invoke(5, cfg);
    await agreeEverywhere(saver, workflow, cfg);
    await workflow.invoke(new Command({ resume: "go" }), cfg);
    await workflow.invoke(7, cfg);
    expect(await agreeEverywhere(saver, workflow, cfg)).toBeGreaterThan(2);
  });

  it("a DeltaChannel message list and a fork made by updateState", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const Chat = Annotation.Root({
      messages: new DeltaChannel(messagesDeltaReducer, { snapshotFrequency: 2 }) as unknown as ReturnType<typeof Annotation<BaseMessage[]>>,
    });
    const graph = new StateGraph(Chat)
      .addNode("reply", () => ({ messages: [new AIMessage({ content: "hi", id: `ai-${Math.random()}` })] }))
      .addEdge(START, "reply")
      .addEdge("reply", END)
      .compile({ checkpointer: saver });
    const cfg = config("delta");
    await graph.invoke({ messages: [new HumanMessage({ content: "hello", id: "h1" })] }, cfg);
    await graph.invoke({ messages: [new HumanMessage({ content: "again", id: "h0" })] }, cfg);
    const forked = await graph.updateState(cfg, { messages: [new HumanMessage({ content: "edited", id: "h2" })] }, "__start__");
    await graph.invoke(null, forked);
    expect(await agreeEverywhere(saver, graph, cfg)).toBeGreaterThan(3);
  });
});
