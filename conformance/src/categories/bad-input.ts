import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

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

/**
 * Bad input gets an error that names what was wrong, and leaves stored data as it was: a missing
 * `thread_id`, and values the serializer cannot store (a function, a cycle), in a channel or a write.
 */
export const badInput: Category = {
  id: "bad-input",
  title: "Bad input (clear errors, nothing stored changes)",
  description:
    "A missing thread_id is rejected with an error naming thread_id; a non-serializable value is rejected with an error naming its channel; after either, everything stored reads back as before.",
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
  ],
};
