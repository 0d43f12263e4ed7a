import { compareWritesSortKeys, writesSortKey, type PendingWrite } from "@langchain/langgraph-checkpoint";

import { checkEqual, collect, mustGet, putCheckpoint, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

/** Tasks whose path order differs from both their id order and the order they write in. */
const TASKS: Array<{ taskId: string; taskPath: string | undefined; writes: PendingWrite[] }> = [
  { taskId: "task-a", taskPath: "~__pregel_pull, \u{1F600}", writes: [["log", "astral path"]] },
  { taskId: "task-b", taskPath: "~__pregel_pull, \uFFFF", writes: [["log", "bmp path"]] },
  { taskId: "task-c", taskPath: "~__pregel_pull, a", writes: [["log", "path a"]] },
  { taskId: "task-0", taskPath: undefined, writes: [["log", "no path"]] },
  {
    taskId: "task-d",
    taskPath: "~__pregel_push, 0",
    // Eleven writes of one task: idx 10 must come after idx 2 (numbers, not strings).
    writes: Array.from({ length: 11 }, (_, i): PendingWrite => ["log", `d${i}`]),
  },
  { taskId: "task-e", taskPath: "~__pregel_pull, a", writes: [["log", "path a, task e"]] },
];

function expectedOrder(): string[] {
  const keyed = TASKS.flatMap(({ taskId, taskPath, writes }) =>
    writes.map((w, idx) => ({ key: writesSortKey(taskPath ?? "", taskId, idx), value: w[1] as string })),
  );
  keyed.sort((a, b) => compareWritesSortKeys(a.key, b.key));
  return keyed.map((k) => k.value);
}

/**
 * Pending writes come back in `writesSortKey` order (task path, task id, index; strings by code
 * point), whatever order they were written in: replaying them in any other order can rebuild a
 * different value for an order-sensitive reducer.
 */
export const writeOrder: Category = {
  id: "write-order",
  title: "Pending-write order (taskPath, writesSortKey)",
  description:
    "getTuple, list and getDeltaChannelHistory return writes ordered by (taskPath, taskId, idx), comparing strings by code point and indices as numbers.",
  checks: [
    {
      name: "getTuple and list return pending writes in writesSortKey order",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const cp = await putCheckpoint(saver, threadConfig(thread), { log: [] });
        for (const task of TASKS) await saver.putWrites(cp, task.writes, task.taskId, task.taskPath);
        const expected = expectedOrder();
        const tuple = await mustGet(saver, cp, "after writes of six tasks");
        checkEqual((tuple.pendingWrites ?? []).map((w) => w[2]), expected, "getTuple pendingWrites order");
        const [listed] = await collect(saver.list(threadConfig(thread), { limit: 1 }));
        checkEqual((listed?.pendingWrites ?? []).map((w) => w[2]), expected, "list pendingWrites order");
      },
    },
    {
      name: "getDeltaChannelHistory replays one step's writes in writesSortKey order",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const c0 = await putCheckpoint(saver, threadConfig(thread), { log: [] });
        for (const task of [...TASKS].reverse()) await saver.putWrites(c0, task.writes, task.taskId, task.taskPath);
        const c1 = await putCheckpoint(saver, c0, {}, { versions: { log: 2 }, newVersions: { log: 2 } });
        const history = await saver.getDeltaChannelHistory({ config: c1, channels: ["log"] });
        checkEqual((history.log?.writes ?? []).map((w) => w[2]), expectedOrder(), "history writes order");
      },
    },
  ],
};
