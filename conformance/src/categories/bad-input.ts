import { AIMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { ID_LIMITS } from "@resumable/core";

import { check, checkEqual, collect, expectThrow, makeCheckpoint, metadata, mustGet, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

/** Everything readable about a thread, to compare before and after a rejected call. */
async function snapshot(saver: BaseCheckpointSaver, thread: string): Promise<unknown> {
  const tuples = await collect(saver.list({ configurable: { thread_id: thread } }));
  return tuples.map((t) => ({ id: t.config.configurable?.checkpoint_id, values: t.checkpoint.channel_values, writes: t.pendingWrites }));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The typed error's field, when the saver throws one of this project's typed errors. */
function fieldOf(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { field?: unknown }).field : undefined;
}

/** A string of exactly `bytes` UTF-8 bytes, mixing one-, two- and four-byte characters. */
function idOfBytes(bytes: number, tag: string): string {
  let out = `${tag}-`;
  const pieces = ["é", "🙂", "a"];
  let i = 0;
  while (Buffer.byteLength(out, "utf8") < bytes) {
    const next = out + pieces[i % pieces.length];
    out = Buffer.byteLength(next, "utf8") <= bytes ? next : `${out}a`;
    i += 1;
  }
  return out;
}

/**
 * Bad input gets an error that names what was wrong, and leaves stored data as it was: a missing
 * `thread_id`, values the serializer cannot store (a function, a cycle, a bigint inside a LangChain
 * message, a throwing `toJSON`), in a channel or a write, and ids beyond the shared limits.
 */
export const badInput: Category = {
  id: "bad-input",
  title: "Bad input (clear errors, nothing stored changes)",
  description:
    "A missing thread_id is rejected with an error naming thread_id; a non-serializable value (a function, a cycle, a bigint inside a LangChain message, a throwing toJSON) is rejected with an error naming its channel, never stored as a placeholder; ids at the shared limits round-trip and longer or malformed ones are refused; after any refusal, everything stored reads back as before.",
  checks: [
    {
      name: "put and putWrites without thread_id fail with an error naming thread_id",
      async run(ctx) {
        const { saver } = await ctx.open();
        const noThread: RunnableConfig = { configurable: { checkpoint_ns: "" } };
        const putError = await expectThrow(() => saver.put(noThread, makeCheckpoint({ a: 1 }), metadata(0), { a: 1 }), "put without thread_id");
        check(/thread_id/.test(messageOf(putError)), `put without thread_id threw "${messageOf(putError)}", which does not name thread_id`);
        const writesError = await expectThrow(
          () => saver.putWrites({ configurable: { checkpoint_ns: "", checkpoint_id: "1" } }, [["a", 1]], "task-1"),
          "putWrites without thread_id",
        );
        check(/thread_id/.test(messageOf(writesError)), `putWrites without thread_id threw "${messageOf(writesError)}", which does not name thread_id`);
        if (ctx.info.kind === "store") {
          // Savers built by this project throw typed errors; others are only held to the message.
          checkEqual(fieldOf(putError), "thread_id", "the typed error's field for put without thread_id");
          checkEqual(fieldOf(writesError), "thread_id", "the typed error's field for putWrites without thread_id");
        }
      },
    },
    {
      name: "a non-serializable channel value fails naming the channel, and nothing stored changes",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const cp = await putCheckpoint(saver, threadConfig(thread), { good: "kept" });
        await saver.putWrites(cp, [["good", "pending"]], "task-1");
        const before = await snapshot(saver, thread);
        const cyclic: Record<string, unknown> = { name: "loop" };
        cyclic.self = cyclic;
        for (const [channel, bad] of [
          ["callback_channel", { onDone: () => "not data" }],
          ["cyclic_channel", cyclic],
        ] as const) {
          const error = await expectThrow(
            () => saver.put(cp, makeCheckpoint({ good: "changed", [channel]: bad }), metadata(1), { good: 2, [channel]: 1 }),
            `put with a non-serializable value in channel "${channel}"`,
          );
          check(messageOf(error).includes(channel), `the error for channel "${channel}" does not name it: "${messageOf(error)}"`);
        }
        checkEqual(await snapshot(saver, thread), before, "the thread after rejected puts");
        const latest = await mustGet(saver, threadConfig(thread), "the latest checkpoint after rejected puts");
        checkEqual(latest.config.configurable?.checkpoint_id, cp.configurable?.checkpoint_id, "the latest checkpoint id");
      },
    },
    {
      name: "a non-serializable write fails naming the channel, and no write of the batch is stored",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const cp = await putCheckpoint(saver, threadConfig(thread), { good: "kept" });
        await saver.putWrites(cp, [["good", "pending"]], "task-1");
        const before = await snapshot(saver, thread);
        const error = await expectThrow(
          () => saver.putWrites(cp, [["fine_channel", "ok"], ["handler_channel", { run: () => 1 }]], "task-2"),
          "putWrites with a function in channel handler_channel",
        );
        check(messageOf(error).includes("handler_channel"), `the error does not name channel "handler_channel": "${messageOf(error)}"`);
        checkEqual(await snapshot(saver, thread), before, `the thread after a rejected putWrites (got ${show(error)})`);
      },
    },
    {
      name: "a value whose serialization throws (a bigint in a message, a throwing toJSON) is refused, never stored as a placeholder",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const cp = await putCheckpoint(saver, threadConfig(thread), { messages: ["kept"] });
        const before = await snapshot(saver, thread);
        const throwing = { toJSON: () => { throw new Error("refuses to serialize"); } };
        for (const [name, bad] of [
          ["a bigint in response_metadata", [new AIMessage({ content: "hi", response_metadata: { tokens: 12n } })]],
          ["a throwing toJSON", [{ item: throwing }]],
        ] as const) {
          const putError = await expectThrow(
            () => saver.put(cp, makeCheckpoint({ messages: bad }), metadata(1), { messages: 2 }),
            `put with ${name} in channel "messages"`,
          );
          check(messageOf(putError).includes("messages"), `the error for ${name} does not name channel "messages": "${messageOf(putError)}"`);
          const writeError = await expectThrow(() => saver.putWrites(cp, [["messages", bad]], "task-bad"), `putWrites with ${name}`);
          check(messageOf(writeError).includes("messages"), `the putWrites error for ${name} does not name channel "messages": "${messageOf(writeError)}"`);
        }
        checkEqual(await snapshot(saver, thread), before, "the thread after refused values");
      },
    },
    {
      name: "ids at the shared limits round-trip exactly; longer ones, NUL and lone surrogates are refused naming the field",
      skipUnless: (info) =>
        info.kind === "store" ? undefined : "the id limits are ResumableSaver's rule; a saver of its own may keep other limits",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = idOfBytes(ID_LIMITS.threadIdBytes, ctx.threadId());
        const ns = idOfBytes(ID_LIMITS.checkpointNsBytes, "ns");
        const channel = idOfBytes(ID_LIMITS.channelBytes, "ch");
        const task = idOfBytes(ID_LIMITS.taskIdBytes, "task");
        const cp = await putCheckpoint(saver, threadConfig(thread, ns), { [channel]: "value" });
        // A task path is not a key: far longer than any id, it still round-trips (it orders writes).
        await saver.putWrites(cp, [[channel, "pending"]], task, idOfBytes(2000, "~__pregel_pull"));
        const back = await mustGet(saver, cp, "the checkpoint with ids at the limits");
        checkEqual(back.config.configurable?.thread_id, thread, "the thread id at the limit");
        checkEqual(back.config.configurable?.checkpoint_ns, ns, "the namespace at the limit");
        checkEqual(back.checkpoint.channel_values, { [channel]: "value" }, "the channel named at the limit");
        checkEqual(back.pendingWrites, [[task, channel, "pending"]], "the write of a task id at the limit");
        const refused: Array<[string, () => Promise<unknown>, string]> = [
          ["a thread id one byte over", () => saver.put(threadConfig(`${thread}a`), makeCheckpoint({}), metadata(0), {}), "thread_id"],
          ["a namespace one byte over", () => saver.put(threadConfig("t", `${ns}a`), makeCheckpoint({}), metadata(0), {}), "checkpoint_ns"],
          ["a thread id with NUL", () => saver.put(threadConfig("a\u0000b"), makeCheckpoint({}), metadata(0), {}), "thread_id"],
          ["a thread id with a lone surrogate", () => saver.put(threadConfig("a\ud800"), makeCheckpoint({}), metadata(0), {}), "thread_id"],
          ["a task id one byte over", () => saver.putWrites(cp, [[channel, 1]], `${task}a`), "taskId"],
          ["a channel one byte over", () => saver.putWrites(cp, [[`${channel}a`, 1]], "task-2"), "channel"],
          ["a task path with a lone surrogate", () => saver.putWrites(cp, [[channel, 1]], "task-3", "p\udc00"), "taskPath"],
          ["a 1 MB thread id on read", () => saver.getTuple(threadConfig("x".repeat(1_000_000))), "thread_id"],
        ];
        for (const [name, call, field] of refused) {
          const error = await expectThrow(call, name);
          checkEqual(fieldOf(error), field, `the field named by the error for ${name} (${messageOf(error)})`);
        }
        const after = await mustGet(saver, cp, "the checkpoint after refused ids");
        checkEqual(after.pendingWrites, [[task, channel, "pending"]], "the writes after refused ids");
      },
    },
  ],
};
