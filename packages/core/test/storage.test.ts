/**
 * How core stores what LangGraph hands it: list channels as the elements they gained, each large
 * message once per thread, short ordered versions, bounded memory.
 */
import { AIMessage, HumanMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";

import { MemoryStore, ResumableSaver, type PutCheckpointRequest, type PutWritesRequest } from "../src/index.js";
import { encodeCounter, nextVersion, versionCounter } from "../src/versions.js";

/** A MemoryStore that keeps a copy of every request, to look at what core sent. */
class RecordingStore extends MemoryStore {
  readonly puts: PutCheckpointRequest[] = [];
  readonly writes: PutWritesRequest[] = [];
  override async putCheckpoint(request: PutCheckpointRequest) {
    this.puts.push(request);
    return super.putCheckpoint(request);
  }
  override async putWrites(request: PutWritesRequest) {
    this.writes.push(request);
    return super.putWrites(request);
  }
}

function chat(checkpointer: ResumableSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode("assistant", (state: { messages: BaseMessage[] }) => ({
      messages: [new AIMessage({ content: `answer ${state.messages.length} ${"a".repeat(2000)}`, id: `ai-${state.messages.length}` })],
    }))
    .addEdge(START, "assistant")
    .addEdge("assistant", END)
    .compile({ checkpointer });
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("a chat thread", () => {
  it("stores each message once, and each step's list as the message it gained", async () => {
    const store = new RecordingStore();
    const graph = chat(new ResumableSaver(store));
    const config = { configurable: { thread_id: "chat" } };
    for (let i = 0; i < 5; i += 1) {
      await graph.invoke({ messages: [new HumanMessage({ content: `question ${i} ${"q".repeat(2000)}`, id: `user-${i}` })] }, config);
    }
    // Every byte core sent, as text: each message's text appears once, in its piece.
    const sent = [
      ...store.puts.flatMap((p) => [...p.chunks.map((c) => text(c.data)), ...p.blobs.map((b) => text(b.value.data)), text(p.record.checkpoint.data)]),
      ...store.writes.flatMap((w) => [...w.chunks.map((c) => text(c.data)), ...w.writes.map((x) => text(x.value.data))]),
    ].join("\n");
    for (let i = 0; i < 5; i += 1) {
      // A piece is sent with every request that references it (insert-or-ignore), but stored once.
      expect(sent.split(`question ${i} `).length - 1).toBeGreaterThanOrEqual(1);
    }
    const stored = (store as unknown as { threads: Map<string, { chunks: Map<string, unknown> }> }).threads.get("chat")!;
    expect(stored.chunks.size).toBe(10);
    // The last checkpoint's messages blob holds one message (a reference), over its parent's version.
    const last = store.puts[store.puts.length - 1]!;
    const messages = last.blobs.find((b) => b.channel === "messages")!;
    expect(messages.baseVersion).toBeDefined();
    expect(messages.value.refs).toHaveLength(1);
    expect(text(messages.value.data)).toBe("[\u0000]");
    expect(last.record.deltaRoots?.messages).toBeDefined();
    // And the whole list reads back.
    const state = await graph.getState(config);
    expect((state.values.messages as BaseMessage[]).map((m) => m.id)).toEqual(
      [0, 1, 2, 3, 4].flatMap((i) => [`user-${i}`, `ai-${2 * i + 1}`]),
    );
  });

  it("writes a whole list again after maxChain deltas", async () => {
    const store = new RecordingStore();
    const graph = chat(new ResumableSaver(store, { deltas: { maxChain: 2 } }));
    const config = { configurable: { thread_id: "bounded" } };
    for (let i = 0; i < 4; i += 1) await graph.invoke({ messages: [new HumanMessage({ content: `q${i}`, id: `user-${i}` })] }, config);
    const chain = store.puts.flatMap((p) => p.blobs.filter((b) => b.channel === "messages")).map((b) => (b.baseVersion === undefined ? "whole" : "delta"));
    expect(chain).toEqual(["whole", "delta", "delta", "whole", "delta", "delta", "whole", "delta"]);
    expect((await graph.getState(config)).values.messages).toHaveLength(8);
  });

  it("stores every value whole with deltas and pieces off", async () => {
    const store = new RecordingStore();
    const graph = chat(new ResumableSaver(store, { deltas: false, pieces: false }));
    const config = { configurable: { thread_id: "whole" } };
    for (let i = 0; i < 2; i += 1) await graph.invoke({ messages: [new HumanMessage({ content: `q${i}`, id: `user-${i}` })] }, config);
    expect(store.puts.flatMap((p) => p.blobs).some((b) => b.baseVersion !== undefined || b.value.refs !== undefined)).toBe(false);
    expect((await graph.getState(config)).values.messages).toHaveLength(4);
  });

  it("remembers a bounded number of threads, and a thread it forgot still reads and writes exactly", async () => {
    const saver = new ResumableSaver(new MemoryStore(), { cache: { maxThreads: 2 } });
    const graph = chat(saver);
    for (const [i, thread] of ["a", "b", "c", "a", "d"].entries()) {
      await graph.invoke({ messages: [new HumanMessage({ content: `hello ${thread}`, id: `user-${i}` })] }, { configurable: { thread_id: thread } });
    }
    expect((saver as unknown as { lineages: { size: number } }).lineages.size).toBe(2);
    const a = await graph.getState({ configurable: { thread_id: "a" } });
    expect((a.values.messages as BaseMessage[]).map((m) => m.id)).toEqual(["user-0", "ai-1", "user-3", "ai-3"]);
  });
});

describe("channel versions", () => {
  it("are short, unique per call, and sort as strings in counter order, after the first release's", () => {
    const counters = [1, 2, 9, 10, 35, 36, 1295, 1296, 46655, 46656, 10 ** 9];
    const versions = counters.map((n) => nextVersion(n - 1));
    expect(versions.map(versionCounter)).toEqual(counters);
    expect([...versions].sort()).toEqual(versions);
    expect(versions.every((v) => v.length <= 16)).toBe(true);
    expect(new Set(Array.from({ length: 1000 }, () => nextVersion(5))).size).toBe(1000);
    const old = "00000000000000000000000000000042.0123456789abcdef";
    expect(versionCounter(old)).toBe(42);
    expect(nextVersion(old) > old).toBe(true);
    expect(versionCounter(nextVersion(old))).toBe(43);
    expect(encodeCounter(36)).toBe("210");
  });
});
