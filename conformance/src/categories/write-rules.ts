import { ERROR, INTERRUPT, RESUME } from "@langchain/langgraph-checkpoint";

import { checkEqual, mustGet, putCheckpoint, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

/**
 * The pending-write rules LangGraph's runtime relies on: a retried task never changes what was
 * recorded (insert-or-ignore per `(task_id, idx)`), while a batch of only special channels replaces
 * what is stored, so that an INTERRUPT can become a RESUME.
 */
export const writeRules: Category = {
  id: "write-rules",
  title: "Write rules (insert-or-ignore, upsert, INTERRUPT→RESUME)",
  description:
    "A retried task keeps its first writes; a batch of only special channels (WRITES_IDX_MAP) replaces the stored ones; special channels use their fixed negative indices.",
  checks: [
    {
      name: "a retried task keeps its first writes (insert-or-ignore per task and index)",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { a: 0 });
        await saver.putWrites(cp, [["a", 1], ["b", 2]], "task-1");
        await saver.putWrites(cp, [["a", 10], ["b", 20], ["c", 30]], "task-1");
        await saver.putWrites(cp, [["a", 5]], "task-2");
        const tuple = await mustGet(saver, cp, "after a retried putWrites");
        checkEqual(
          tuple.pendingWrites,
          [["task-1", "a", 1], ["task-1", "b", 2], ["task-1", "c", 30], ["task-2", "a", 5]],
          "pending writes after task-1 wrote twice",
        );
      },
    },
    {
      name: "a batch of only special channels replaces the stored one (INTERRUPT then RESUME, twice)",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { a: 0 });
        await saver.putWrites(cp, [[INTERRUPT, [{ value: "approve?", id: "i-1" }]]], "task-1");
        await saver.putWrites(cp, [[INTERRUPT, [{ value: "approve again?", id: "i-2" }]]], "task-1");
        await saver.putWrites(cp, [[RESUME, ["no"]]], "task-1");
        await saver.putWrites(cp, [[RESUME, ["yes"]]], "task-1");
        const tuple = await mustGet(saver, cp, "after INTERRUPT and RESUME");
        const byChannel = Object.fromEntries((tuple.pendingWrites ?? []).map(([, ch, v]) => [ch, v]));
        checkEqual((tuple.pendingWrites ?? []).length, 2, "number of special writes kept (one INTERRUPT, one RESUME)");
        checkEqual(byChannel[INTERRUPT], [{ value: "approve again?", id: "i-2" }], "the INTERRUPT write (the later one must replace the first)");
        checkEqual(byChannel[RESUME], ["yes"], "the RESUME write (the later one must replace the first)");
      },
    },
    {
      name: "special channels use their own negative index, so they never collide with ordinary writes",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { a: 0 });
        await saver.putWrites(cp, [["x", "ordinary"]], "task-1");
        await saver.putWrites(cp, [[ERROR, { message: "boom" }]], "task-1");
        await saver.putWrites(cp, [[INTERRUPT, ["ask"]]], "task-1");
        const tuple = await mustGet(saver, cp, "after ordinary and special writes of one task");
        const channels = (tuple.pendingWrites ?? []).map(([, ch]) => ch).sort();
        checkEqual(channels, [ERROR, INTERRUPT, "x"].sort(), "channels of the stored writes");
      },
    },
    {
      name: "a batch mixing special and ordinary channels is insert-or-ignore",
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { a: 0 });
        await saver.putWrites(cp, [[ERROR, "first error"], ["__error_source_node__", "node-a"]], "task-1");
        await saver.putWrites(cp, [[ERROR, "second error"], ["__error_source_node__", "node-b"]], "task-1");
        const tuple = await mustGet(saver, cp, "after two mixed batches");
        const byChannel = Object.fromEntries((tuple.pendingWrites ?? []).map(([, ch, v]) => [ch, v]));
        checkEqual(byChannel[ERROR], "first error", "the ERROR write of a mixed batch (the first must win)");
        checkEqual(byChannel.__error_source_node__, "node-a", "the ordinary write of a mixed batch (the first must win)");
      },
    },
  ],
};
