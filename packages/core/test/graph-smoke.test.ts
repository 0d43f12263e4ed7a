import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, DeltaChannel, END, START, StateGraph, messagesDeltaReducer } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";

import { MemoryStore, ResumableSaver } from "../src/index.js";

// A DeltaChannel list rebuilt from the store through getDeltaChannelHistory equals the live value,
// across snapshots, in every durability mode.
describe("DeltaChannel state through the saver", () => {
  for (const durability of ["exit", "async", "sync"] as const) {
    it(`rebuilds the same messages after 12 turns (${durability})`, async () => {
      const State = Annotation.Root({
        messages: new DeltaChannel(messagesDeltaReducer, { snapshotFrequency: 5 }) as unknown as ReturnType<typeof Annotation<BaseMessage[]>>,
      });
      const graph = new StateGraph(State)
        .addNode("reply", (state: { messages: BaseMessage[] }) => ({ messages: [new AIMessage(`reply ${state.messages.length}`)] }))
        .addEdge(START, "reply")
        .addEdge("reply", END);
      const store = new MemoryStore();
      const app = graph.compile({ checkpointer: new ResumableSaver(store) });
      const config = { configurable: { thread_id: `delta-${durability}` } };
      let live: BaseMessage[] = [];
      for (let turn = 0; turn < 12; turn += 1) {
        const out = (await app.invoke({ messages: [new HumanMessage(`turn ${turn}`)] }, { ...config, durability }));
        live = out.messages;
      }
      expect(live).toHaveLength(24);
      const fresh = graph.compile({ checkpointer: new ResumableSaver(store) });
      const state = await fresh.getState(config);
      expect((state.values as { messages: BaseMessage[] }).messages.map((m) => m.content)).toEqual(live.map((m) => m.content));
    });
  }
});
