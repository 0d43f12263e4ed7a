import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";

import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

import { check, checkEqual, mustGet, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

function messages(): BaseMessage[] {
  return [
    new SystemMessage({ content: "You are terse.", id: "m0" }),
    new HumanMessage({ content: "Refund order 42 🙂", id: "m1", additional_kwargs: { lang: "en" } }),
    new AIMessage({
      content: "",
      id: "m2",
      tool_calls: [{ id: "call-1", name: "lookup", args: { order: 42, note: "quote \" and NUL \u0000" } }],
    }),
    new ToolMessage({ content: [{ type: "text", text: "found" }], tool_call_id: "call-1", id: "m3" }),
  ];
}

/** A comparable view of a message: its class and the fields a user relies on. */
function messageView(m: unknown): unknown {
  if (typeof m !== "object" || m === null) return m;
  const msg = m as BaseMessage & { tool_calls?: unknown; tool_call_id?: unknown };
  return {
    class: msg.constructor?.name,
    type: msg.getType?.(),
    content: msg.content,
    id: msg.id,
    tool_calls: msg.tool_calls,
    tool_call_id: msg.tool_call_id,
    additional_kwargs: msg.additional_kwargs,
  };
}

function pseudoRandomBytes(size: number): Uint8Array {
  const out = new Uint8Array(size);
  let x = 2463534242;
  for (let i = 0; i < size; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** What the saver's serializer alone makes of a value. */
async function viaSerde(saver: BaseCheckpointSaver, value: unknown): Promise<unknown> {
  const [type, bytes] = await saver.serde.dumpsTyped(value);
  return saver.serde.loadsTyped(type, bytes);
}

/** Values that JSON, text columns, C strings or UTF-16 handling commonly mangle. */
function awkwardValues(): Record<string, unknown> {
  return {
    bytes: new Uint8Array([0, 255, 1, 254, 0, 128, 10, 13]),
    nestedBytes: { payload: new Uint8Array([0, 0, 0, 7]) },
    map: new Map<unknown, unknown>([["a", 1], [2, { b: [3] }]]),
    set: new Set(["x", 1, "y"]),
    date: new Date("2026-11-29T10:00:00.123Z"),
    undefinedInList: [1, undefined, 3],
    nul: "before\u0000after",
    astral: "𝄞 music, 🙂 smile, 𠜎 cjk ext-b",
    mixed: { "key\u0000nul": "v", "🙂": ["a\u0000", { "\"'": "\\" }] },
  };
}

/**
 * Values survive the trip through the store unchanged: LangChain messages, bytes, maps, sets, dates,
 * `undefined`, NUL bytes, astral unicode and a 5 MB value, as channel values, pending writes and
 * metadata.
 */
export const serialization: Category = {
  id: "serialization",
  title: "Serialization round trips",
  description:
    "Channel values, pending writes and metadata round-trip unchanged: LangChain messages, Uint8Array, Map, Set, Date, undefined, NUL bytes, astral unicode, a 5 MB value.",
  checks: [
    {
      name: "LangChain messages round-trip as channel values and pending writes",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { messages: messages() });
        await saver.putWrites(cp, [["messages", messages()]], "task-1");
        const tuple = await mustGet(saver, cp, "a checkpoint holding messages");
        const stored = tuple.checkpoint.channel_values.messages;
        check(Array.isArray(stored), `channel "messages" came back as ${show(stored)}`);
        checkEqual(stored.map(messageView), messages().map(messageView), "messages read back from the channel");
        const written = tuple.pendingWrites?.[0]?.[2];
        check(Array.isArray(written), `the messages write came back as ${show(written)}`);
        checkEqual(written.map(messageView), messages().map(messageView), "messages read back from the pending write");
      },
    },
    {
      name: "bytes, Map, Set, Date, undefined, NUL bytes and astral unicode round-trip",
      async run(ctx) {
        const { saver } = await ctx.open();
        const values = awkwardValues();
        // A Date comes back as whatever the saver's serializer makes of it (JsonPlusSerializer: its ISO
        // string); everything else must come back as it went in.
        const expected: Record<string, unknown> = { ...values, date: await viaSerde(saver, values.date) };
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), values, {
          metadata: { source: "loop", step: 0, parents: {}, note: "meta \u0000 NUL 𝄞", nested: { "🙂": [1, "two"] } } as never,
        });
        await saver.putWrites(cp, Object.entries(values), "task-1");
        const tuple = await mustGet(saver, cp, "a checkpoint holding awkward values");
        for (const [channel, value] of Object.entries(values)) {
          checkEqual(tuple.checkpoint.channel_values[channel], expected[channel], `channel "${channel}" (stored ${show(value)})`);
        }
        checkEqual(
          Object.fromEntries((tuple.pendingWrites ?? []).map(([, ch, v]) => [ch, v])),
          expected,
          "pending writes of awkward values",
        );
        checkEqual((tuple.metadata as Record<string, unknown>).note, "meta \u0000 NUL 𝄞", "metadata with a NUL byte and astral unicode");
        checkEqual((tuple.metadata as Record<string, unknown>).nested, { "🙂": [1, "two"] }, "nested metadata with an emoji key");
      },
    },
    {
      name: "a 5 MB value round-trips as a channel value and a pending write",
      async run(ctx) {
        const { saver } = await ctx.open();
        const text = "0123456789abcdef🙂".repeat(Math.ceil((5 * 1024 * 1024) / 20)).slice(0, 5 * 1024 * 1024);
        const bytes = pseudoRandomBytes(5 * 1024 * 1024);
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { text, bytes });
        await saver.putWrites(cp, [["bytes", bytes]], "task-1");
        const tuple = await mustGet(saver, cp, "a checkpoint holding 5 MB values");
        const gotText = tuple.checkpoint.channel_values.text;
        check(gotText === text, `the 5 MB string came back different (length ${typeof gotText === "string" ? gotText.length : show(gotText)}, expected ${text.length})`);
        checkEqual(tuple.checkpoint.channel_values.bytes, bytes, "the 5 MB Uint8Array channel");
        checkEqual(tuple.pendingWrites?.[0]?.[2], bytes, "the 5 MB Uint8Array write");
      },
    },
  ],
};
