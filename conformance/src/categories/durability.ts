import type { RunnableConfig } from "@langchain/core/runnables";

import { Command, Counter, approvalGraph, parallelGraph } from "../graph-fixtures.js";
import { checkEqual, collect, expectThrow } from "../helpers.js";
import type { Category, Check } from "../types.js";

type Durability = "exit" | "async" | "sync";

function checksFor(durability: Durability): Check[] {
  const config = (thread: string): RunnableConfig & { durability: Durability } => ({ configurable: { thread_id: thread }, durability });
  return [
    {
      name: `durability "${durability}": interrupt, then resume from a fresh saver`,
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const cfg = config(ctx.threadId());
        await approvalGraph(counter).compile({ checkpointer: opened.saver }).invoke({ log: [] }, cfg);
        const done = await approvalGraph(counter).compile({ checkpointer: ctx.reopen(opened) }).invoke(new Command({ resume: "ok" }), cfg);
        checkEqual(done.log, ["prepared", "approved:ok", "finished"], "final state after resume");
        checkEqual(counter.counts, { prepare: 1, approve: 2, finish: 1 }, "node executions");
        const history = await collect(opened.saver.list({ configurable: { thread_id: cfg.configurable!.thread_id } }));
        checkEqual(history.length > 0, true, "checkpoints stored");
      },
    },
    {
      name: `durability "${durability}": a failed branch resumes without re-running its siblings`,
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        let failing = true;
        const cfg = config(ctx.threadId());
        await expectThrow(
          () => parallelGraph(counter, () => failing).compile({ checkpointer: opened.saver }).invoke({ log: [] }, cfg),
          "the run whose flaky branch throws",
        );
        failing = false;
        const done = await parallelGraph(counter, () => failing).compile({ checkpointer: ctx.reopen(opened) }).invoke(null, cfg);
        checkEqual([...done.log].sort(), ["flaky", "joined", "ok1", "ok2"], "final state after resume");
        checkEqual(counter.counts, { ok1: 1, ok2: 1, flaky: 2, join: 1 }, "node executions (ok1 and ok2 must not re-run)");
      },
    },
  ];
}

/** Each of LangGraph's durability modes, on an interrupted run and a failed one. */
export const durability: Category = {
  id: "durability",
  title: 'Durability modes ("exit", "async", "sync")',
  description:
    "In each durability mode an interrupted run resumes from a fresh saver, and a failed run resumes without re-running finished branches.",
  checks: (["exit", "async", "sync"] as const).flatMap(checksFor),
};
