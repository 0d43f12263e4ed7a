import type { RunnableConfig } from "@langchain/core/runnables";
import { InvalidConfigError, type ResumableSaver, type ThreadState, type ThreadStatus } from "@resumable/core";

import { check, checkEqual, expectThrow, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category, CheckContext, Check } from "../types.js";
import { resumable } from "./leases.js";
import { statusSkip } from "./thread-status.js";

/** How many threads of each state the listing checks create (about 340 in all, most of them done). */
const COUNTS: Record<Exclude<ThreadState, "dead">, number> = { done: 240, pending: 45, failed: 30, interrupted: 25 };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A thread in the given state, through the saver as LangGraph would drive it. */
async function makeThread(saver: ResumableSaver, threadId: string, state: Exclude<ThreadState, "dead">): Promise<RunnableConfig> {
  if (state === "done") return putCheckpoint(saver, threadConfig(threadId), { result: 1 });
  const cp = await putCheckpoint(saver, threadConfig(threadId), { "branch:to:work": null });
  if (state === "failed") await saver.putWrites(cp, [["__error__", { message: `failure of ${threadId}`, name: "Error" }]], "task-work");
  if (state === "interrupted") await saver.putWrites(cp, [["__interrupt__", [{ id: "i1", value: { question: threadId } }]]], "task-work");
  return cp;
}

interface Population {
  /** threadId → state, in creation order */
  threads: Array<{ threadId: string; state: ThreadState }>;
  /** The time between the two halves: threads of the first half are older. */
  middle: number;
  saver: ResumableSaver;
}

/** Threads of every state, interleaved, created in two halves a few milliseconds apart. */
async function populate(ctx: CheckContext): Promise<Population> {
  const { saver: raw } = await ctx.open();
  const saver = resumable(raw);
  const order: Array<Exclude<ThreadState, "dead">> = [];
  const left = { ...COUNTS };
  while (Object.values(left).some((n) => n > 0)) {
    for (const state of Object.keys(left) as Array<keyof typeof left>) {
      // Interleave in proportion, so that every state has threads in both halves.
      const share = Math.max(1, Math.round(COUNTS[state] / 25));
      for (let i = 0; i < share && left[state] > 0; i += 1, left[state] -= 1) order.push(state);
    }
  }
  const threads: Population["threads"] = [];
  const half = Math.floor(order.length / 2);
  let middle = 0;
  const run = ctx.threadId("list");
  for (let i = 0; i < order.length; i += 1) {
    if (i === half) {
      await sleep(15);
      middle = Date.now();
      await sleep(15);
    }
    const threadId = `${run}-${String(i).padStart(4, "0")}`;
    await makeThread(saver, threadId, order[i]!);
    threads.push({ threadId, state: order[i]! });
  }
  // Two dead-lettered threads, among the first half.
  for (const dead of threads.filter((t) => t.state === "failed").slice(0, 2)) {
    const status = await saver.getThreadStatus(dead.threadId);
    check(status, `no status for ${dead.threadId}`);
    const updated = await saver.updateThreadStatus(dead.threadId, { checkpointId: status.checkpointId, state: "dead", error: "gave up", updatedAt: status.updatedAt });
    check(updated?.state === "dead", `dead-lettering ${dead.threadId} did not apply: ${show(updated)}`);
    dead.state = "dead";
  }
  return { threads, middle, saver };
}

/** Pages through listThreads with `limit`, returning every thread id in order. */
async function pageAll(saver: ResumableSaver, options: Parameters<ResumableSaver["listThreads"]>[0], limit: number): Promise<ThreadStatus[]> {
  const out: ThreadStatus[] = [];
  let cursor: string | undefined;
  for (let guard = 0; guard < 10_000; guard += 1) {
    const page = await saver.listThreads({ ...options, limit, cursor });
    check(page.threads.length <= limit, `listThreads({ limit: ${limit} }) returned ${page.threads.length} threads`);
    const seen = new Set(out.map((t) => t.threadId));
    const again = page.threads.find((t) => seen.has(t.threadId));
    check(again === undefined, `paging by ${limit}: thread ${again?.threadId} came back on a later page`);
    out.push(...page.threads);
    if (page.cursor === undefined) return out;
    check(page.threads.length === limit, `a page of ${page.threads.length} (< limit ${limit}) came with a cursor`);
    cursor = page.cursor;
  }
  throw new Error("listThreads never stopped returning a cursor");
}

function ordered(list: ThreadStatus[]): boolean {
  for (let i = 1; i < list.length; i += 1) {
    const a = list[i - 1]!;
    const b = list[i]!;
    if (a.updatedAt > b.updatedAt || (a.updatedAt === b.updatedAt && a.threadId >= b.threadId)) return false;
  }
  return true;
}

/** Only the threads of this population (a store shared with other checks may hold more). */
function mine(pop: Population, list: ThreadStatus[]): ThreadStatus[] {
  const ids = new Set(pop.threads.map((t) => t.threadId));
  return list.filter((t) => ids.has(t.threadId));
}

const check_ = (name: string, run: Check["run"]): Check => ({ name, skipUnless: statusSkip, run });

/**
 * `listThreads` over a few hundred threads in every state: exact filters by state and age, oldest
 * activity first, and keyset pages that visit every match once.
 */
export const threadListing: Category = {
  id: "thread-listing",
  title: "listThreads (by status and age, oldest first, paged by cursor)",
  description:
    "listThreads returns exactly the threads of the requested states (pending, done, failed, interrupted, dead) and age, ordered by last activity then thread id, in pages whose cursors visit every match once; bad options get clear errors.",
  checks: [
    check_("filters by state exactly, oldest activity first, with each thread's error or interrupt", async (ctx) => {
      const pop = await populate(ctx);
      for (const state of ["pending", "done", "failed", "interrupted", "dead"] as const) {
        const expected = pop.threads.filter((t) => t.state === state).map((t) => t.threadId);
        const listed = mine(pop, await pageAll(pop.saver, { status: state }, 1000));
        check(ordered(listed), `listThreads({ status: "${state}" }) is not ordered by (updatedAt, threadId)`);
        checkEqual(listed.map((t) => t.threadId), expected, `threads listed with status "${state}"`);
        check(listed.every((t) => t.state === state), `a thread of another state was listed for "${state}"`);
      }
      const failed = mine(pop, (await pop.saver.listThreads({ status: "failed", limit: 1000 })).threads)[0];
      check(failed?.error === `failure of ${failed?.threadId}`, `a failed thread's error is ${show(failed?.error)}`);
      const interrupted = mine(pop, (await pop.saver.listThreads({ status: "interrupted", limit: 1000 })).threads)[0];
      checkEqual(interrupted?.interrupts.map((i) => i.value), [{ question: interrupted?.threadId }], "an interrupted thread's interrupts");
      checkEqual(mine(pop, (await pop.saver.listThreads({ status: "dead", limit: 10 })).threads).map((t) => t.error), ["gave up", "gave up"], "dead threads' errors");
    }),
    check_("pages of 7 over several states visit every match once, in order", async (ctx) => {
      const pop = await populate(ctx);
      const states: ThreadState[] = ["pending", "failed", "dead"];
      const expected = pop.threads.filter((t) => states.includes(t.state)).map((t) => t.threadId).sort();
      const listed = mine(pop, await pageAll(pop.saver, { status: states }, 7));
      check(ordered(listed), "pages of several states are not ordered by (updatedAt, threadId)");
      checkEqual(new Set(listed.map((t) => t.threadId)).size, listed.length, "threads listed twice across pages");
      checkEqual(listed.map((t) => t.threadId).sort(), expected, "threads listed across pages of 7");
      const all = mine(pop, await pageAll(pop.saver, {}, 50));
      checkEqual(all.length, pop.threads.length, "threads listed without a status filter");
      check(ordered(all), "pages without a status filter are not ordered");
    }),
    check_("olderThan keeps only threads whose last activity is older", async (ctx) => {
      const pop = await populate(ctx);
      const older = mine(pop, await pageAll(pop.saver, { status: ["pending", "failed", "interrupted"], olderThan: pop.middle }, 13));
      const half = new Set(pop.threads.slice(0, Math.floor(pop.threads.length / 2)).map((t) => t.threadId));
      const expected = pop.threads.filter((t) => half.has(t.threadId) && ["pending", "failed", "interrupted"].includes(t.state)).map((t) => t.threadId);
      checkEqual(older.map((t) => t.threadId).sort(), expected.sort(), "threads listed with olderThan = the middle of the population");
      check(older.every((t) => t.updatedAt < pop.middle), "a thread not older than olderThan was listed");
      const asDate = mine(pop, await pageAll(pop.saver, { status: "pending", olderThan: new Date(pop.middle) }, 100));
      checkEqual(asDate.length, expected.filter((id) => pop.threads.find((t) => t.threadId === id)?.state === "pending").length, "olderThan given as a Date");
      checkEqual((await pop.saver.listThreads({ olderThan: 0 })).threads.length, 0, "threads older than the epoch");
    }),
    check_("a thread moves between states as its status changes, and leaves the listing when deleted", async (ctx) => {
      const { saver: raw } = await ctx.open();
      const saver = resumable(raw);
      const thread = ctx.threadId("moves");
      const cp = await makeThread(saver, thread, "failed");
      const inState = async (state: ThreadState) => (await saver.listThreads({ status: state, limit: 1000 })).threads.some((t) => t.threadId === thread);
      check(await inState("failed"), "the thread is not listed as failed");
      await putCheckpoint(saver, cp, { result: 2 }, { versions: { result: 1 } });
      check(!(await inState("failed")) && (await inState("done")), "after a finishing checkpoint the thread is not listed as done only");
      await saver.deleteThread(thread);
      for (const state of ["done", "failed", "pending"] as const) check(!(await inState(state)), `a deleted thread is still listed as ${state}`);
    }),
    check_("bad options get clear errors", async (ctx) => {
      const { saver: raw } = await ctx.open();
      const saver = resumable(raw);
      for (const [options, field] of [
        [{ limit: 0 }, "limit"],
        [{ limit: 1001 }, "limit"],
        [{ status: "sleeping" as ThreadState }, "status"],
        [{ status: [] as ThreadState[] }, "status"],
        [{ cursor: "not-a-cursor" }, "cursor"],
        [{ olderThan: Number.NaN }, "olderThan"],
      ] as const) {
        const error = await expectThrow(() => saver.listThreads(options), `listThreads(${show(options)})`);
        check(error instanceof InvalidConfigError && error.field === field, `listThreads(${show(options)}) threw ${show(error)}, not an InvalidConfigError for "${field}"`);
      }
    }),
  ],
};
