import type { BaseMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";

import {
  Command,
  Counter,
  HumanMessage,
  approvalGraph,
  chainGraph,
  deltaMessagesGraph,
  fanOutGraph,
  functionalWorkflow,
  parallelGraph,
  subgraphGraph,
} from "../graph-fixtures.js";
import { check, checkEqual, collect, expectThrow, show } from "../helpers.js";
import type { Category } from "../types.js";

const configOf = (thread: string): RunnableConfig => ({ configurable: { thread_id: thread } });

function messageView(m: BaseMessage): unknown {
  return { class: m.constructor.name, content: m.content, id: m.id };
}

/**
 * Real LangGraph.js graphs on the subject, resumed through a second saver over the same data (as a
 * new process would): interrupts, failed parallel branches, `Send`, subgraphs, time travel, the
 * functional API and a `DeltaChannel` message list.
 */
export const graphs: Category = {
  id: "graphs",
  title: "Real graphs (interrupt, failure, Send, subgraph, time travel, functional API, DeltaChannel)",
  description:
    "LangGraph.js 1.7 graphs run on the subject and resume from a fresh saver over the same data: finished work is never re-run, and state equals what the live run produced.",
  checks: [
    {
      name: "interrupt, then resume from a fresh saver with Command({ resume })",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const config = configOf(ctx.threadId());
        const first = await approvalGraph(counter).compile({ checkpointer: opened.saver }).invoke({ log: ["start"] }, config);
        const interrupts = (first as { __interrupt__?: Array<{ value: unknown }> }).__interrupt__;
        checkEqual(interrupts?.map((i) => i.value), ["approve the refund?"], "the interrupt returned by the first run");
        const graph = approvalGraph(counter).compile({ checkpointer: ctx.reopen(opened) });
        const state = await graph.getState(config);
        checkEqual(state.next, ["approve"], "next node of the interrupted thread, read by a fresh saver");
        const done = await graph.invoke(new Command({ resume: "yes" }), config);
        checkEqual(done.log, ["start", "prepared", "approved:yes", "finished"], "final state after resume");
        checkEqual(counter.counts, { prepare: 1, approve: 2, finish: 1 }, "node executions (prepare must not re-run)");
      },
    },
    {
      name: "a failed parallel branch resumes without re-running its finished siblings",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        let failing = true;
        const config = configOf(ctx.threadId());
        const error = await expectThrow(
          () => parallelGraph(counter, () => failing).compile({ checkpointer: opened.saver }).invoke({ log: [] }, config),
          "the run whose flaky branch throws",
        );
        check(String(error).includes("failed on purpose"), `the run failed with an unexpected error: ${show(error)}`);
        failing = false;
        const done = await parallelGraph(counter, () => failing).compile({ checkpointer: ctx.reopen(opened) }).invoke(null, config);
        checkEqual([...done.log].sort(), ["flaky", "joined", "ok1", "ok2"], "final state after resume");
        checkEqual(counter.counts, { ok1: 1, ok2: 1, flaky: 2, join: 1 }, "node executions (ok1 and ok2 must not re-run)");
      },
    },
    {
      name: "Send fan-out: a failed item resumes without re-running the others",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        let failing = true;
        const config = configOf(ctx.threadId());
        const items = [0, 1, 2, 3, 4];
        await expectThrow(
          () => fanOutGraph(counter, 3, () => failing, items.length).compile({ checkpointer: opened.saver }).invoke({ items }, config),
          "the run whose item 3 throws",
        );
        failing = false;
        const done = await fanOutGraph(counter, 3, () => failing, items.length)
          .compile({ checkpointer: ctx.reopen(opened) })
          .invoke(null, config);
        checkEqual([...done.results].sort((a, b) => a - b), [0, 10, 20, 30, 40], "results after resume");
        checkEqual(
          counter.counts,
          { "work-0": 1, "work-1": 1, "work-2": 1, "work-3": 2, "work-4": 1, collect: 1 },
          "task executions (only item 3 may run twice)",
        );
      },
    },
    {
      name: "a subgraph interrupts and resumes; its checkpoints live in their own namespace",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const config = configOf(ctx.threadId());
        await subgraphGraph(counter).compile({ checkpointer: opened.saver }).invoke({ log: [], inner: [] }, config);
        const saver = ctx.reopen(opened);
        const namespaces = new Set((await collect(saver.list(config))).map((t) => t.config.configurable?.checkpoint_ns as string));
        check(
          [...namespaces].some((ns) => ns.startsWith("sub:")),
          `no checkpoint in a "sub:<task id>" namespace was listed; namespaces: ${show([...namespaces])}`,
        );
        const graph = subgraphGraph(counter).compile({ checkpointer: saver });
        const state = await graph.getState(config, { subgraphs: true });
        const inner = state.tasks[0]?.state as { next?: string[] } | undefined;
        checkEqual(inner?.next, ["inner_ask"], "the subgraph's next node, read by a fresh saver");
        const done = await graph.invoke(new Command({ resume: "fine" }), config);
        checkEqual(done, { log: ["before", "after"], inner: ["inner_first", "inner_answer:fine"] }, "final state after resume");
        checkEqual(counter.counts, { before: 1, inner_first: 1, inner_ask: 2, after: 1 }, "node executions (inner_first must not re-run)");
      },
    },
    {
      name: "time travel: fork from an old checkpoint; the original history stays intact",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const config = configOf(ctx.threadId());
        const graph = chainGraph(counter).compile({ checkpointer: opened.saver });
        await graph.invoke({ log: [] }, config);
        const original = await graph.getState(config);
        const history = await collect(graph.getStateHistory(config));
        const afterA = history.find((s) => s.next.length === 1 && s.next[0] === "b");
        check(afterA, `no checkpoint with next = ["b"] in the history: ${show(history.map((s) => s.next))}`);
        const fresh = chainGraph(counter).compile({ checkpointer: ctx.reopen(opened) });
        const forkConfig = await fresh.updateState(afterA.config, { log: ["edited"] });
        const forked = await fresh.invoke(null, forkConfig);
        checkEqual(forked.log, ["a", "edited", "b", "c"], "state of the fork");
        checkEqual(counter.counts, { a: 1, b: 2, c: 2 }, "node executions (a must not re-run)");
        const old = await fresh.getState(original.config);
        checkEqual(old.values.log, ["a", "b", "c"], "the original final checkpoint, read by id after the fork");
        const latest = await fresh.getState(config);
        checkEqual(latest.values.log, ["a", "edited", "b", "c"], "the thread's latest state (the fork's end)");
      },
    },
    {
      name: "functional API: a task() result is reused on resume, not recomputed",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const config = configOf(ctx.threadId());
        await functionalWorkflow(counter, opened.saver).invoke(5, config);
        const done = await functionalWorkflow(counter, ctx.reopen(opened)).invoke(new Command({ resume: "go" }), config);
        checkEqual(done, { first: 10, second: 20, answer: "go" }, "the workflow's result");
        checkEqual(counter.counts, { "double(5)": 1, "double(10)": 1 }, "task executions (double(5) must not re-run)");
      },
    },
    {
      name: "a DeltaChannel message list rebuilt by a fresh saver equals the live one at every turn",
      async run(ctx) {
        const opened = await ctx.open();
        const counter = new Counter();
        const config = configOf(ctx.threadId());
        const live = deltaMessagesGraph(counter).compile({ checkpointer: opened.saver });
        for (let turn = 0; turn < 8; turn += 1) {
          const out = await live.invoke({ messages: [new HumanMessage({ content: `question ${turn}`, id: `human-${turn}` })] }, config);
          const rebuilt = await deltaMessagesGraph(counter).compile({ checkpointer: ctx.reopen(opened) }).getState(config);
          const rebuiltMessages = (rebuilt.values as { messages?: BaseMessage[] }).messages ?? [];
          checkEqual(rebuiltMessages.map(messageView), out.messages.map(messageView), `messages rebuilt after turn ${turn}`);
          checkEqual(out.messages.length, 2 * (turn + 1), `live message count after turn ${turn}`);
        }
        // The list must really have been stored as deltas, or this check proves nothing about history.
        const tuples = await collect(opened.saver.list(config));
        const withoutValue = tuples.filter((t) => "messages" in t.checkpoint.channel_versions && !("messages" in t.checkpoint.channel_values));
        check(withoutValue.length > 0, "every checkpoint stored the whole message list; DeltaChannel was not in effect");
      },
    },
  ],
};
