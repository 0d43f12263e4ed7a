/**
 * Nothing is stored silently changed: values the serializer would mangle or replace by a placeholder
 * are refused with a SerializationError naming the channel and the path, filters that cannot mean
 * anything are refused, and ids follow one rule on every store.
 */
import { AIMessage } from "@langchain/core/messages";
import { emptyCheckpoint, uuid6, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";

import { ID_LIMITS, InvalidConfigError, MemoryStore, ResumableSaver, SerializationError } from "../src/index.js";

const meta = { source: "loop" as const, step: 0, parents: {} };
const PLACEHOLDER = "[unable to serialize, circular reference is too complex to analyze]";

function checkpoint(values: Record<string, unknown>): Checkpoint {
  return {
    ...emptyCheckpoint(),
    id: uuid6(0),
    channel_values: values,
    channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, 1])),
  };
}

function nested(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i += 1) value = [value];
  return value;
}

async function everything(saver: ResumableSaver, threadId: string) {
  const out = [];
  for await (const t of saver.list({ configurable: { thread_id: threadId } })) out.push(t);
  return out;
}

describe("a value whose serialization fails is refused, never stored as a placeholder", () => {
  const cases: Array<[string, () => unknown, RegExp]> = [
    ["an AIMessage with a bigint in response_metadata", () => [new AIMessage({ content: "hi", response_metadata: { tokens: 12n } })], /bigint/],
    ["a toJSON() that throws", () => ({ item: { toJSON: () => { throw new Error("no json for you"); } } }), /no json for you/],
    ["a value nested 5000 levels deep", () => nested(5000), /levels/],
    ["a value nested 5500 levels deep", () => nested(5500), /levels/],
    ["a value nested 6000 levels deep", () => nested(6000), /levels/],
  ];
  for (const [name, make, reason] of cases) {
    it(`put refuses ${name}, naming the channel, and stores nothing`, async () => {
      const saver = new ResumableSaver(new MemoryStore());
      const first = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ messages: ["ok"] }), meta, { messages: 1 });
      const before = await everything(saver, "t");
      const err = await saver.put(first, { ...checkpoint({ messages: make() }), id: uuid6(1) }, meta, { messages: 2 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SerializationError);
      expect((err as Error).message).toContain('channel "messages"');
      expect((err as Error).message).toMatch(reason);
      expect(await everything(saver, "t")).toEqual(before);
    });
    it(`putWrites refuses ${name}, naming the channel, and stores nothing`, async () => {
      const saver = new ResumableSaver(new MemoryStore());
      const config = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({}), meta, {});
      const err = await saver.putWrites(config, [["ok", 1], ["messages", make()]], "task-1").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SerializationError);
      expect((err as Error).message).toContain('channel "messages"');
      expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
    });
  }

  it("names the path to the bigint inside the message", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const value = [new AIMessage({ content: "hi", response_metadata: { usage: { tokens: 12n } } })];
    const err = (await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ messages: value }), meta, { messages: 1 }).catch((e: unknown) => e)) as SerializationError;
    expect(err).toBeInstanceOf(SerializationError);
    expect(err.path).toMatch(/^\$\[0\].*response_metadata.*usage.*tokens$/);
  });

  it("a value that really is the placeholder text round-trips", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ text: PLACEHOLDER, list: [PLACEHOLDER] }), meta, { text: 1, list: 1 });
    await saver.putWrites(config, [["text", PLACEHOLDER]], "task-1");
    const tuple = await saver.getTuple(config);
    expect(tuple?.checkpoint.channel_values).toEqual({ text: PLACEHOLDER, list: [PLACEHOLDER] });
    expect(tuple?.pendingWrites).toEqual([["task-1", "text", PLACEHOLDER]]);
  });

  it("a cycle that a toJSON-bearing object hides is refused, not stored as [Circular]", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const message = new AIMessage({ content: "hi", additional_kwargs: {} });
    (message.additional_kwargs as Record<string, unknown>).self = message.additional_kwargs;
    const err = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ messages: [message] }), meta, { messages: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SerializationError);
    expect((err as Error).message).toMatch(/cycle|circular/i);
  });
});

describe("numbers and binary values round-trip exactly or are refused", () => {
  it("-0 comes back as -0", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ n: -0, list: [1, -0, { x: -0 }] }), meta, { n: 1, list: 1 });
    const values = (await saver.getTuple(config))!.checkpoint.channel_values as { n: number; list: [number, number, { x: number }] };
    expect(Object.is(values.n, -0)).toBe(true);
    expect(Object.is(values.list[1], -0)).toBe(true);
    expect(Object.is(values.list[2].x, -0)).toBe(true);
    expect(values.list[0]).toBe(1);
  });

  const refused: Array<[string, unknown, RegExp]> = [
    ["NaN", { score: Number.NaN }, /NaN/],
    ["Infinity", [1, Number.POSITIVE_INFINITY], /Infinity/],
    ["-Infinity", -Infinity, /Infinity/],
    ["a Float32Array", { weights: new Float32Array([1.5, 2.5]) }, /Float32Array/],
    ["an Int16Array", new Int16Array([1, 2]), /Int16Array/],
    ["a bare ArrayBuffer", { buffer: new ArrayBuffer(4) }, /ArrayBuffer/],
    ["a DataView", new DataView(new ArrayBuffer(2)), /DataView/],
    ["an invalid Date", { at: new Date(Number.NaN) }, /Date/],
  ];
  for (const [name, value, reason] of refused) {
    it(`${name} is refused with a SerializationError naming the path`, async () => {
      const saver = new ResumableSaver(new MemoryStore());
      const err = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ v: value }), meta, { v: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(SerializationError);
      expect((err as Error).message).toMatch(reason);
      expect((err as Error).message).toContain('channel "v"');
      expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined();
    });
  }

  it("a Buffer nested in state comes back with the same bytes", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "t" } }, checkpoint({ v: { file: Buffer.from([0, 1, 255]) } }), meta, { v: 1 });
    const back = (await saver.getTuple(config))!.checkpoint.channel_values.v as { file: Uint8Array };
    expect(back.file).toBeInstanceOf(Uint8Array);
    expect([...back.file]).toEqual([0, 1, 255]);
  });
});

describe("metadata filters that cannot mean anything are refused", () => {
  async function filled() {
    const saver = new ResumableSaver(new MemoryStore());
    const a = await saver.put({ configurable: { thread_id: "f" } }, checkpoint({}), { ...meta, kind: "a" } as never, {});
    const protoMeta = JSON.parse('{"source":"loop","step":1,"parents":{},"__proto__":{"x":1}}') as typeof meta;
    await saver.put(a, { ...checkpoint({}), id: uuid6(1) }, protoMeta, {});
    return saver;
  }

  it("a filter with an own __proto__ key matches only the checkpoints that have it", async () => {
    const saver = await filled();
    const filter = JSON.parse('{"__proto__":{"x":1}}') as Record<string, unknown>;
    const found = [];
    for await (const t of saver.list({ configurable: { thread_id: "f" } }, { filter })) found.push(t.metadata);
    expect(found).toHaveLength(1);
    expect(Object.prototype.hasOwnProperty.call(found[0], "__proto__")).toBe(true);
    const other = JSON.parse('{"__proto__":{"x":2}}') as Record<string, unknown>;
    const none = [];
    for await (const t of saver.list({ configurable: { thread_id: "f" } }, { filter: other })) none.push(t);
    expect(none).toEqual([]);
  });

  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const bad: Array<[string, unknown]> = [
    ["a bigint value", { step: 1n }],
    ["a circular value", { user: cyclic }],
    ["a function value", { source: () => "loop" }],
    ["a symbol value", { source: Symbol("loop") }],
    ["a number instead of an object", 5],
    ["a string instead of an object", "source"],
    ["an array instead of an object", [["source", "loop"]]],
    ["a thousand keys", Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`k${i}`, i]))],
  ];
  for (const [name, filter] of bad) {
    it(`${name} gets an InvalidConfigError naming the filter`, async () => {
      const saver = await filled();
      const err = await (async () => {
        for await (const _ of saver.list({ configurable: { thread_id: "f" } }, { filter: filter as Record<string, unknown> })) {
          // draining
        }
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect((err as InvalidConfigError).field).toMatch(/^filter/);
    });
  }
});

describe("one id rule for every store", () => {
  it("the limits are exported", () => {
    expect(ID_LIMITS.threadIdBytes).toBeGreaterThanOrEqual(256);
  });

  it("a thread id over the limit is refused before anything is stored; one at the limit works", async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    const long = "x".repeat(ID_LIMITS.threadIdBytes + 1);
    const err = await saver.put({ configurable: { thread_id: long } }, checkpoint({ a: 1 }), meta, { a: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as InvalidConfigError).field).toBe("thread_id");
    expect((err as Error).message).toContain(String(ID_LIMITS.threadIdBytes));
    const atLimit = "é".repeat(ID_LIMITS.threadIdBytes / 2);
    const config = await saver.put({ configurable: { thread_id: atLimit } }, checkpoint({ a: 1 }), meta, { a: 1 });
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ a: 1 });
    await expect(saver.getTuple({ configurable: { thread_id: "x".repeat(1_000_000) } })).rejects.toBeInstanceOf(InvalidConfigError);
  });

  it("NUL and lone surrogates are refused in every id and in the task path", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    await expect(saver.put({ configurable: { thread_id: "a\u0000b" } }, checkpoint({}), meta, {})).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(saver.put({ configurable: { thread_id: "a", checkpoint_ns: "\ud800" } }, checkpoint({}), meta, {})).rejects.toBeInstanceOf(InvalidConfigError);
    const config = await saver.put({ configurable: { thread_id: "a" } }, checkpoint({}), meta, {});
    await expect(saver.putWrites(config, [["x", 1]], "task\udc00")).rejects.toBeInstanceOf(InvalidConfigError);
    const err = await saver.putWrites(config, [["x", 1]], "task-1", "path\ud800").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as InvalidConfigError).field).toBe("taskPath");
    await expect(saver.putWrites(config, [["x\u0000y", 1]], "task-1")).rejects.toBeInstanceOf(InvalidConfigError);
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
  });

  it("deleteThread refuses NaN, as put does, instead of deleting the thread \"NaN\"", async () => {
    const saver = new ResumableSaver(new MemoryStore());
    const config = await saver.put({ configurable: { thread_id: "NaN" } }, checkpoint({ a: 1 }), meta, { a: 1 });
    await expect(saver.put({ configurable: { thread_id: Number.NaN } }, checkpoint({}), meta, {})).rejects.toBeInstanceOf(InvalidConfigError);
    await expect(saver.deleteThread(Number.NaN as unknown as string)).rejects.toBeInstanceOf(InvalidConfigError);
    expect(await saver.getTuple(config)).toBeDefined();
  });
});
