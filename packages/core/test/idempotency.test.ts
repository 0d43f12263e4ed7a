import { Annotation, Command, END, MemorySaver, START, Send, StateGraph, interrupt } from "@langchain/langgraph";
import type { LangGraphRunnableConfig } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import { MissingThreadIdError } from "../src/errors.js";
import { idempotencyKey, idempotencyKeyParts } from "../src/idempotency.js";

interface Seen {
  node: string;
  key: string;
  taskId: string;
}

const State = Annotation.Root({
  items: Annotation<number[]>({ reducer: (_a, b) => b, default: () => [] }),
  done: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function refundGraph(seen: Seen[], checkpointer: MemorySaver) {
  const record = (node: string, config: LangGraphRunnableConfig) =>
    seen.push({ node, key: idempotencyKey(config, "charge"), taskId: String(config.configurable?.["__pregel_task_id"]) });
  return new StateGraph(State)
    .addNode("lookup", (_s, config) => {
      record("lookup", config);
      return { done: ["lookup"] };
    })
    .addNode("charge", (_s, config) => {
      record("charge", config);
      const approved = interrupt("approve?");
      return { done: [`charge:${String(approved)}`] };
    })
    .addEdge(START, "lookup")
    .addEdge("lookup", "charge")
    .addEdge("charge", END)
    .compile({ checkpointer });
}

describe("idempotencyKey", () => {
  it("is stable when an interrupted task runs again on resume, and new for a later run", async () => {
    const seen: Seen[] = [];
    const graph = refundGraph(seen, new MemorySaver());
    const config = { configurable: { thread_id: "idem-resume" } };
    await graph.invoke({ items: [] }, config);
    await graph.invoke(new Command({ resume: "yes" }), config);
    const charges = seen.filter((s) => s.node === "charge");
    expect(charges).toHaveLength(2);
    expect(charges[1]!.key).toBe(charges[0]!.key);

    // A second request on the same thread is a new run: new supersteps, new keys.
    await graph.invoke({ items: [] }, config);
    const later = seen.filter((s) => s.node === "charge");
    expect(later).toHaveLength(3);
    expect(later[2]!.key).not.toBe(charges[0]!.key);
    // lookup and charge of each run; the resumed charge shares its key with the first attempt.
    expect(new Set(seen.map((s) => s.key)).size).toBe(4);
  });

  it("is the same when a run starts over from nothing (exit durability), although task ids change", async () => {
    const first: Seen[] = [];
    const second: Seen[] = [];
    const config = { configurable: { thread_id: "idem-exit" }, durability: "exit" as const };
    // Two savers with nothing stored: what a second process sees when the first died before "exit".
    await refundGraph(first, new MemorySaver()).invoke({ items: [] }, config);
    await refundGraph(second, new MemorySaver()).invoke({ items: [] }, config);
    expect(second.map((s) => s.key)).toEqual(first.map((s) => s.key));
    expect(second.map((s) => s.taskId)).not.toEqual(first.map((s) => s.taskId));
  });

  it("differs between threads, nodes, labels and parallel Send tasks", async () => {
    const seen: Array<{ item: number; key: string; parts: ReturnType<typeof idempotencyKeyParts> }> = [];
    const graph = new StateGraph(State)
      .addNode("fan", () => ({}))
      .addNode("pay", (s: { items: number[] }, config) => {
        const item = s.items[0]!;
        seen.push({ item, key: idempotencyKey(config), parts: idempotencyKeyParts(config) });
        expect(idempotencyKey(config, "email")).not.toBe(idempotencyKey(config));
        return { done: [`pay${item}`] };
      })
      .addEdge(START, "fan")
      .addConditionalEdges("fan", (s) => s.items.map((item) => new Send("pay", { items: [item] })))
      .addEdge("pay", END)
      .compile({ checkpointer: new MemorySaver() });
    await graph.invoke({ items: [1, 2, 3] }, { configurable: { thread_id: "idem-send-a" } });
    await graph.invoke({ items: [1, 2, 3] }, { configurable: { thread_id: "idem-send-b" } });
    const a = seen.slice(0, 3);
    const b = seen.slice(3);
    expect(new Set(a.map((s) => s.key)).size).toBe(3);
    expect(new Set([...a, ...b].map((s) => s.key)).size).toBe(6);
    expect(a[0]!.parts).toMatchObject({ threadId: "idem-send-a", namespace: "", node: "pay" });
  });

  it("explains what is missing", () => {
    expect(() => idempotencyKey({ configurable: {} })).toThrow(MissingThreadIdError);
    expect(() => idempotencyKey({ configurable: { thread_id: "t" } })).toThrow(/langgraph_step/);
  });
});
