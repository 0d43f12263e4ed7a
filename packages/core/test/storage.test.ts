/**
 * How core stores what LangGraph hands it: list channels as the elements they gained, each large
 * message once per thread, short ordered versions, bounded memory.
 */
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";

import { MemoryStore, ResumableSaver, type PutCheckpointRequest, type PutWritesRequest } from "../src/index.js";
import { dumpsJsonPlusParts, joinPieces } from "../src/json-plus.js";
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

describe("shared pieces", () => {
  const envelopeOf = (message: BaseMessage) => new TextEncoder().encode(JSON.stringify(message)).byteLength - String(message.content).length;

  it("store a LangChain message's text with a few bytes of its envelope, and read back exactly", async () => {
    const store = new RecordingStore();
    const graph = chat(new ResumableSaver(store));
    const config = { configurable: { thread_id: "packed" } };
    const question = new HumanMessage({ content: `question ${"q".repeat(2000)}`, id: "user-0" });
    await graph.invoke({ messages: [question] }, config);
    const answer = (await graph.getState(config)).values.messages[1] as AIMessage;
    const stored = (store as unknown as { threads: Map<string, { chunks: Map<string, Map<number, { data: Uint8Array }>> }> }).threads.get("packed")!;
    const pieces = [...stored.chunks.values()].map((chunk) => [...chunk.values()][0]!.data);
    expect(pieces).toHaveLength(2);
    // The texts as JSON carry 160-230 bytes of envelope each (class path, kwargs, empty defaults).
    expect(envelopeOf(question)).toBeGreaterThan(150);
    expect(envelopeOf(answer)).toBeGreaterThan(150);
    const sizes = pieces.map((p) => p.byteLength).sort((a, b) => a - b);
    const texts = [String(question.content).length, String(answer.content).length].sort((a, b) => a - b);
    // Stored: the text, its id and a handful of bytes.
    for (let i = 0; i < 2; i += 1) expect(sizes[i]! - texts[i]!).toBeLessThan(40);
    const back = (await graph.getState(config)).values.messages as BaseMessage[];
    expect(back.map((m) => JSON.stringify(m))).toEqual([JSON.stringify(question), JSON.stringify(answer)]);
  });

  it("read back whatever envelope a message has, and pieces stored unpacked by earlier releases", async () => {
    const messages = [
      new HumanMessage({ content: "h".repeat(600), id: "h", name: "someone", additional_kwargs: { x: 1 } }),
      new AIMessage({
        content: "a".repeat(600),
        id: "a",
        tool_calls: [{ name: "lookup", args: { q: "}}" }, id: "call-1", type: "tool_call" }],
        usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
        response_metadata: { model_name: "m" },
      }),
      new AIMessage({ content: [{ type: "text", text: "b".repeat(600) }], id: "b" }),
      new ToolMessage({ content: "t".repeat(600), tool_call_id: "call-1", id: "t" }),
      new SystemMessage({ content: "s".repeat(600), id: "s" }),
    ];
    const parts = dumpsJsonPlusParts(messages, "test", { minBytes: 512, maxBytes: 1 << 20 });
    expect(parts.refs).toHaveLength(messages.length);
    for (const piece of parts.pieces.values()) expect(piece[0]).toBe(1);
    expect(new TextDecoder().decode(joinPieces(parts.data, parts.refs, parts.pieces, "test"))).toBe(JSON.stringify(messages));
    // An unpacked piece (plain JSON text) reads as itself.
    const plain = new Map([...parts.pieces].map(([hash], i) => [hash, new TextEncoder().encode(JSON.stringify(messages[i]))]));
    expect(new TextDecoder().decode(joinPieces(parts.data, parts.refs, plain, "test"))).toBe(JSON.stringify(messages));
    // A packed piece with an envelope this release does not know is refused, not misread.
    const [hash, piece] = [...parts.pieces][0]!;
    const broken = new Map(parts.pieces).set(hash, Uint8Array.from([1, 200, 0, ...piece.subarray(3)]));
    expect(() => joinPieces(parts.data, parts.refs, broken, "test")).toThrow(/unknown envelope/);
  });
});

describe("compact checkpoint records", () => {
  const base = { v: 4, channel_values: {}, channel_versions: { a: "13.AAAAAAAA" } };
  const put = async (saver: ResumableSaver, id: string, checkpoint: Record<string, unknown>) =>
    saver.put({ configurable: { thread_id: "compact", checkpoint_ns: "" } }, { ...base, id, ...checkpoint } as never, { source: "loop", step: 1, parents: {} }, {});

  it("store LangGraph's ts as a number and leave its `__input__` out of versions_seen, and read both back exactly", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const ts = "2026-12-01T18:45:46.026Z";
    const seen = { __input__: {}, __start__: { __start__: "12.AAAAAAAA" }, agent: { "branch:to:agent": "13.AAAAAAAA" } };
    const config = await put(saver, "c1", { ts, versions_seen: seen });
    const stored = text(store.puts[0]!.record.checkpoint.data);
    expect(stored).not.toContain(ts);
    expect(stored).not.toContain("__input__");
    expect(stored).toContain(String(Date.parse(ts)));
    const back = (await saver.getTuple(config))!.checkpoint;
    expect(back.ts).toBe(ts);
    expect(back.versions_seen).toEqual(seen);
    expect(Object.keys(back.versions_seen)).toEqual(Object.keys(seen));
  });

  it("keep any other ts and versions_seen as they are", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const cases = [
      { ts: "2026-12-01T18:45:46+00:00", versions_seen: { __input__: { x: "12.AAAAAAAA" } } },
      { ts: "yesterday", versions_seen: { agent: {}, __input__: {} } },
      { ts: "+275760-09-13T00:00:00.000Z", versions_seen: {} },
      { ts: 42, versions_seen: { __input__: [] } },
    ];
    for (const [i, checkpoint] of cases.entries()) {
      const config = await put(saver, `k${i}`, checkpoint);
      const back = (await saver.getTuple(config))!.checkpoint;
      expect(back.ts).toBe(checkpoint.ts);
      expect(back.versions_seen).toEqual(checkpoint.versions_seen);
      expect(Object.keys(back.versions_seen)).toEqual(Object.keys(checkpoint.versions_seen));
    }
  });
});

describe("channels without a value", () => {
  /** A store whose reads lose one blob: what a store that made a checkpoint visible too early returns. */
  class LosingStore extends MemoryStore {
    lose: { channel: string; version: string } | undefined;
    override async getCheckpoint(scope: Parameters<MemoryStore["getCheckpoint"]>[0]) {
      const stored = await super.getCheckpoint(scope);
      const lost = this.lose;
      if (!stored || !lost) return stored;
      return { ...stored, blobs: stored.blobs.filter((b) => b.channel !== lost.channel || b.version !== lost.version) };
    }
  }

  it("get no blob, and the record names the blobs its put stored", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const graph = chat(saver);
    const config = { configurable: { thread_id: "empties" } };
    for (let i = 0; i < 3; i += 1) await graph.invoke({ messages: [new HumanMessage({ content: `q${i}`, id: `user-${i}` })] }, config);
    // LangGraph gives a consumed channel (`__start__` after its step, a branch after its node) a new
    // version without a value: nothing is stored for it.
    const blobs = store.puts.flatMap((p) => p.blobs);
    expect(blobs.filter((b) => b.value.type === "empty")).toEqual([]);
    const consumed = store.puts.filter((p) => p.record.channelVersions.__start__ !== undefined && !p.blobs.some((b) => b.channel === "__start__"));
    expect(consumed.length).toBeGreaterThan(0);
    // Every checkpoint reads back as LangGraph wrote it: the consumed channels absent, the others there.
    for await (const tuple of saver.list(config)) {
      const values = tuple.checkpoint.channel_values as Record<string, unknown>;
      expect(Object.keys(values).every((channel) => values[channel] !== undefined)).toBe(true);
      const stored = (await store.getCheckpoint({ threadId: "empties", checkpointNs: "", checkpointId: tuple.checkpoint.id }))!;
      // Required: exactly the blobs its own put stored, each a channel that has a value.
      const required = (await saver.requiredBlobs(stored)).map((r) => r.channel).sort();
      const put = store.puts.find((p) => p.record.checkpointId === tuple.checkpoint.id)!;
      expect(required).toEqual(put.blobs.map((b) => b.channel).sort());
      expect(required.every((channel) => channel in values)).toBe(true);
    }
    expect((await graph.getState(config)).values.messages).toHaveLength(6);
  });

  it("hold null in the record, not in a blob, whether the channel is new or carried over", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const thread = { configurable: { thread_id: "nulls", checkpoint_ns: "" } };
    const base = { v: 4, versions_seen: { __input__: {} } };
    const first = await saver.put(
      thread,
      { ...base, id: "1f000000-0000-6000-8000-000000000001", ts: "2026-12-02T00:00:00.000Z", channel_values: { a: null, b: 1 }, channel_versions: { a: "1.x", b: "1.x" } },
      { source: "loop", step: 0, parents: {} },
      { a: "1.x", b: "1.x" },
    );
    // Only b gets a blob; a is carried over, still null, while b changes.
    const second = await saver.put(
      first,
      { ...base, id: "1f000000-0000-6000-8000-000000000002", ts: "2026-12-02T00:00:01.000Z", channel_values: { a: null, b: 2 }, channel_versions: { a: "1.x", b: "2.y" } },
      { source: "loop", step: 1, parents: {} },
      { b: "2.y" },
    );
    expect(store.puts.map((p) => p.blobs.map((b) => b.channel))).toEqual([["b"], ["b"]]);
    expect((await saver.getTuple(first))!.checkpoint.channel_values).toEqual({ a: null, b: 1 });
    expect((await saver.getTuple(second))!.checkpoint.channel_values).toEqual({ a: null, b: 2 });
    // A chat: the branch channel LangGraph sets to null after __start__ reads back null, with no blob.
    const graph = chat(saver);
    const config = { configurable: { thread_id: "null-branch" } };
    await graph.invoke({ messages: [new HumanMessage({ content: "q", id: "user-0" })] }, config);
    let seen = 0;
    for await (const tuple of saver.list(config)) {
      const values = tuple.checkpoint.channel_values as Record<string, unknown>;
      for (const channel of Object.keys(values).filter((c) => values[c] === null)) {
        seen += 1;
        const put = store.puts.find((p) => p.record.checkpointId === tuple.checkpoint.id)!;
        expect(put.blobs.some((b) => b.channel === channel)).toBe(false);
      }
    }
    expect(seen).toBeGreaterThan(0);
  });

  it("let a read tell a torn checkpoint from an empty channel", async () => {
    const store = new LosingStore();
    const saver = new ResumableSaver(store);
    const graph = chat(saver);
    const config = { configurable: { thread_id: "torn" } };
    await graph.invoke({ messages: [new HumanMessage({ content: "q", id: "user-0" })] }, config);
    const latest = (await store.getCheckpoint({ threadId: "torn", checkpointNs: "" }))!;
    store.lose = { channel: "messages", version: latest.record.channelVersions.messages! };
    await expect(saver.getTuple(config)).rejects.toThrow(/is torn: its put stored channel "messages" at version .*, and that blob is missing/);
    store.lose = undefined;
    expect((await saver.getTuple(config))!.checkpoint.channel_values).toHaveProperty("messages");
  });

  it("keep an empty blob in the object form, and records of earlier releases read as before", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const thread = { configurable: { thread_id: "object-form", checkpoint_ns: "" } };
    // A checkpoint with a field LangGraph does not write keeps the object form and its empty blobs.
    const config = await saver.put(
      thread,
      { v: 4, id: "c1", ts: "2026-12-01T18:45:46.026Z", versions_seen: {}, extra: 1, channel_values: { a: 1 }, channel_versions: { a: "12.A", b: "12.A" } } as never,
      { source: "loop", step: 1, parents: {} },
      { a: "12.A", b: "12.A" },
    );
    expect(store.puts[0]!.blobs.map((b) => [b.channel, b.value.type])).toEqual([["a", "json"], ["b", "empty"]]);
    const stored = (await store.getCheckpoint({ threadId: "object-form", checkpointNs: "", checkpointId: "c1" }))!;
    expect((await saver.requiredBlobs(stored)).map((r) => r.channel)).toEqual(["a", "b"]);
    expect((await saver.getTuple(config))!.checkpoint.channel_values).toEqual({ a: 1 });
  });
});

describe("checkpoint metadata", () => {
  const put = async (saver: ResumableSaver, id: string, metadata: Record<string, unknown>) =>
    saver.put(
      { configurable: { thread_id: "meta", checkpoint_ns: "" } },
      { v: 4, id, ts: "2026-12-01T18:45:46.026Z", versions_seen: {}, channel_values: {}, channel_versions: {} } as never,
      metadata as never,
      {},
    );

  it("keeps the runtime's own keys out of metadataJson, written short, and reads every key back exactly", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const runtime = { source: "loop", step: 7, parents: {}, delta_writes_versioned: true, counters_since_delta_snapshot: { messages: [99, 149] } };
    const config = await put(saver, "m1", runtime);
    const record = store.puts[0]!.record;
    expect(record.metadataJson).toEqual({ source: "loop", step: 7 });
    expect(record.metadata.type).toBe("+");
    expect(text(record.metadata.data)).toBe('dp{"messages":[99,149]}');
    const back = (await saver.getTuple(config))!.metadata as Record<string, unknown>;
    expect(back).toEqual(runtime);
    expect(Object.keys(back)).toEqual(Object.keys(runtime).sort());
  });

  it("keeps unusual values of those keys, and an own __proto__ key, in metadataJson", async () => {
    const store = new RecordingStore();
    const saver = new ResumableSaver(store);
    const odd = JSON.parse('{"__proto__": {"x": 1}, "parents": {"": "root-1"}, "delta_writes_versioned": false, "source": "loop", "step": 1}') as Record<string, unknown>;
    const config = await put(saver, "m2", odd);
    expect(store.puts[0]!.record.metadata.type).toBe("=");
    const back = (await saver.getTuple(config))!.metadata as Record<string, unknown>;
    expect(Object.prototype.hasOwnProperty.call(back, "__proto__")).toBe(true);
    expect(JSON.stringify(back)).toBe(JSON.stringify(Object.fromEntries(Object.entries(odd).sort(([a], [b]) => (a < b ? -1 : 1)))));
    // With the usual parents beside an own __proto__: split, and both still read back.
    const split = JSON.parse('{"__proto__": 5, "parents": {}, "source": "loop", "step": 2}') as Record<string, unknown>;
    const second = await put(saver, "m3", split);
    expect(store.puts[1]!.record.metadata.type).toBe("+");
    expect(JSON.stringify((await saver.getTuple(second))!.metadata)).toBe('{"__proto__":5,"parents":{},"source":"loop","step":2}');
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

describe("MemoryStore", () => {
  it("keeps a copy of metadata JSON as a JSON round trip would, and later changes to the caller's object do not reach it", async () => {
    const store = new MemoryStore();
    const metadataJson = JSON.parse('{"__proto__":{"x":1},"list":[1,"two",null,{"deep":[true]}],"n":-1.5}') as Record<string, unknown>;
    const odd = { when: new Date(0), gone: undefined, zero: -0, list: [1, undefined] } as Record<string, unknown>;
    const record = (id: string, json: Record<string, unknown>) => ({
      threadId: "t",
      checkpointNs: "",
      checkpointId: id,
      parentCheckpointId: undefined,
      checkpoint: { type: "json", data: new TextEncoder().encode("{}") },
      metadata: { type: "json", data: new TextEncoder().encode("{}") },
      metadataJson: json,
      channelVersions: {},
    });
    await store.putCheckpoint({ record: record("1", metadataJson), blobs: [], chunks: [] });
    await store.putCheckpoint({ record: record("2", odd), blobs: [], chunks: [] });
    ((metadataJson.list as unknown[])[3] as { deep: boolean[] }).deep.push(false);
    (odd.list as unknown[]).push(3);
    const first = await store.getCheckpoint({ threadId: "t", checkpointNs: "", checkpointId: "1" });
    expect(first!.record.metadataJson).toEqual(JSON.parse('{"__proto__":{"x":1},"list":[1,"two",null,{"deep":[true]}],"n":-1.5}'));
    expect(Object.prototype.hasOwnProperty.call(first!.record.metadataJson, "__proto__")).toBe(true);
    const second = await store.getCheckpoint({ threadId: "t", checkpointNs: "", checkpointId: "2" });
    expect(second!.record.metadataJson).toEqual({ when: "1970-01-01T00:00:00.000Z", zero: 0, list: [1, null] });
    expect(Object.is(second!.record.metadataJson.zero, 0)).toBe(true);
    await store.putCheckpoint({ record: record("3", { zero: -0, nested: [-0] }), blobs: [], chunks: [] });
    const third = await store.getCheckpoint({ threadId: "t", checkpointNs: "", checkpointId: "3" });
    expect(Object.is(third!.record.metadataJson.zero, 0)).toBe(true);
    expect(Object.is((third!.record.metadataJson.nested as number[])[0], 0)).toBe(true);
  });

  it("keeps its own copy of the bytes it is given, a Buffer included", async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    const config = await saver.put(
      { configurable: { thread_id: "t", checkpoint_ns: "" } },
      { v: 4, id: "1f000000-0000-6000-8000-000000000001", ts: "2026-12-02T00:00:00.000Z", channel_values: {}, channel_versions: {}, versions_seen: {} },
      { source: "loop", step: 0, parents: {} },
      {},
    );
    const checkpointId = config.configurable!.checkpoint_id as string;
    // Buffer.prototype.slice returns a view of the same memory, not a copy.
    const given = Buffer.from('"written"');
    const write = { taskId: "task", idx: 0, channel: "c", value: { type: "json", data: given }, taskPath: "" };
    await store.putWrites({ threadId: "t", checkpointNs: "", checkpointId, writes: [write], chunks: [], mode: "upsert" });
    given.fill(0x20);
    const read = await store.getCheckpoint({ threadId: "t", checkpointNs: "" });
    expect(Buffer.from(read!.writes[0]!.value.data).toString()).toBe('"written"');
  });
});
