import { isDeepStrictEqual } from "node:util";
import type { PendingWrite } from "@langchain/langgraph-checkpoint";

import { check, checkEqual, mustGet, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

const TASKS = 24;

/** Concurrent `putWrites` on one checkpoint, as parallel branches issue them: none lost, none doubled. */
export const parallelWrites: Category = {
  id: "parallel-writes",
  title: "Parallel putWrites on one checkpoint",
  description: `${TASKS} tasks writing to one checkpoint at once (plus concurrent retries, and from two savers over the same data) lose nothing and duplicate nothing.`,
  checks: [
    {
      name: `${TASKS} concurrent tasks, each retried concurrently, keep exactly one write per task and index`,
      async run(ctx) {
        const { saver } = await ctx.open();
        const cp = await putCheckpoint(saver, threadConfig(ctx.threadId()), { a: 0 });
        const batch = (t: number, attempt: number): PendingWrite[] => [
          ["a", `t${t}-a${attempt}`],
          ["b", { t, attempt }],
          ["c", [t, attempt]],
        ];
        await Promise.all(
          Array.from({ length: TASKS }, (_, t) => [
            saver.putWrites(cp, batch(t, 1), `task-${String(t).padStart(2, "0")}`, `~__pregel_pull, node-${t}`),
            saver.putWrites(cp, batch(t, 2), `task-${String(t).padStart(2, "0")}`, `~__pregel_pull, node-${t}`),
          ]).flat(),
        );
        const tuple = await mustGet(saver, cp, "after concurrent writes");
        const writes = tuple.pendingWrites ?? [];
        checkEqual(writes.length, TASKS * 3, "number of pending writes (one per task and index)");
        for (let t = 0; t < TASKS; t += 1) {
          const mine = writes.filter(([id]) => id === `task-${String(t).padStart(2, "0")}`);
          checkEqual(mine.map(([, ch]) => ch), ["a", "b", "c"], `channels written by task ${t}`);
          const values = mine.map(([, , v]) => v);
          const first = batch(t, 1).map(([, v]) => v);
          const second = batch(t, 2).map(([, v]) => v);
          for (let i = 0; i < 3; i += 1) {
            check(
              isDeepStrictEqual(values[i], first[i]) || isDeepStrictEqual(values[i], second[i]),
              `write ${i} of task ${t} is ${show(values[i])}, which neither attempt wrote`,
            );
          }
        }
      },
    },
    {
      name: "two savers over the same data writing at once lose nothing",
      async run(ctx) {
        const opened = await ctx.open();
        const other = ctx.reopen(opened);
        const cp = await putCheckpoint(opened.saver, threadConfig(ctx.threadId()), { a: 0 });
        await Promise.all(
          Array.from({ length: TASKS }, (_, t) => (t % 2 === 0 ? opened.saver : other).putWrites(cp, [["x", t]], `task-${t}`)),
        );
        const tuple = await mustGet(opened.saver, cp, "after writes from two savers");
        checkEqual(
          (tuple.pendingWrites ?? []).map(([, , v]) => v as number).sort((a, b) => a - b),
          Array.from({ length: TASKS }, (_, t) => t),
          "values written by the two savers",
        );
      },
    },
  ],
};
