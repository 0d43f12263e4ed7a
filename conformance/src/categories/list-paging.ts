import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";

import { check, checkEqual, collect, idOf, metadata, putCheckpoint, threadConfig } from "../helpers.js";
import type { Category, CheckContext } from "../types.js";

const COUNT = 520;

/** A thread of {@link COUNT} checkpoints in one chain, plus noise in another namespace and thread. */
async function longThread(ctx: CheckContext, saver: BaseCheckpointSaver): Promise<{ thread: string; ids: string[] }> {
  const thread = ctx.threadId("long");
  const ids: string[] = [];
  let parent: RunnableConfig = threadConfig(thread);
  for (let step = 0; step < COUNT; step += 1) {
    parent = await putCheckpoint(saver, parent, { n: step }, { versions: { n: step + 1 }, metadata: metadata(step) });
    ids.push(idOf(parent));
  }
  await putCheckpoint(saver, threadConfig(thread, "child:noise"), { n: -1 });
  await putCheckpoint(saver, threadConfig(ctx.threadId("other")), { n: -2 });
  return { thread, ids: ids.reverse() };
}

/** Pages through a namespace with `before` and `limit`, as a UI listing history would. */
async function page(saver: BaseCheckpointSaver, thread: string, size: number): Promise<string[][]> {
  const pages: string[][] = [];
  let before: RunnableConfig | undefined;
  for (let guard = 0; guard < COUNT; guard += 1) {
    const tuples = await collect(saver.list(threadConfig(thread), { limit: size, before }));
    if (tuples.length === 0) break;
    check(tuples.length <= size, `list({ limit: ${size} }) returned ${tuples.length} checkpoints`);
    pages.push(tuples.map((t) => idOf(t.config)));
    before = tuples[tuples.length - 1]!.config;
  }
  return pages;
}

function firstDifference(actual: string[], expected: string[]): string {
  const i = actual.findIndex((id, k) => id !== expected[k]);
  const at = i === -1 ? Math.min(actual.length, expected.length) : i;
  return `first difference at position ${at} of ${expected.length}: expected ${expected[at]}, got ${actual[at]}`;
}

/** `list` over a long thread: newest first, and `before`/`limit` pages without gaps or repeats. */
export const listPaging: Category = {
  id: "list-paging",
  title: `list over ${COUNT} checkpoints (order, before, limit)`,
  description: `list returns every checkpoint of a ${COUNT}-checkpoint thread newest first; paging with before and limit visits each exactly once.`,
  checks: [
    {
      name: `lists all ${COUNT} checkpoints of a namespace newest first; before alone and limit alone cut it right`,
      async run(ctx) {
        const { saver } = await ctx.open();
        const { thread, ids } = await longThread(ctx, saver);
        const listed = (await collect(saver.list(threadConfig(thread)))).map((t) => idOf(t.config));
        checkEqual(listed.length, ids.length, "number of checkpoints listed");
        check(listed.join() === ids.join(), `list order is not newest first: ${firstDifference(listed, ids)}`);
        const latest = await saver.getTuple(threadConfig(thread));
        checkEqual(latest && idOf(latest.config), ids[0], "getTuple without checkpoint_id (the newest checkpoint)");
        const before = (await collect(saver.list(threadConfig(thread), { before: { configurable: { checkpoint_id: ids[400] } } }))).map((t) =>
          idOf(t.config),
        );
        check(before.join() === ids.slice(401).join(), `list({ before: the 401st newest }): ${firstDifference(before, ids.slice(401))}`);
        const newest = (await collect(saver.list(threadConfig(thread), { limit: 3 }))).map((t) => idOf(t.config));
        checkEqual(newest, ids.slice(0, 3), "list({ limit: 3 })");
        const all = await collect(saver.list(threadConfig(thread), { limit: COUNT * 2 }));
        checkEqual(all.length, COUNT, `list({ limit: ${COUNT * 2} }) on ${COUNT} checkpoints`);
      },
    },
    {
      name: "pages with before and limit visit every checkpoint exactly once, in order",
      async run(ctx) {
        const { saver } = await ctx.open();
        const { thread, ids } = await longThread(ctx, saver);
        for (const size of [1, 37, 250]) {
          if (size === 1) {
            // A page of one, from the middle, is enough to catch an off-by-one in `before`.
            const [one] = await collect(saver.list(threadConfig(thread), { limit: 1, before: { configurable: { checkpoint_id: ids[100] } } }));
            checkEqual(one && idOf(one.config), ids[101], "list({ limit: 1, before: the 101st newest })");
            continue;
          }
          const pages = await page(saver, thread, size);
          const flat = pages.flat();
          checkEqual(pages.length, Math.ceil(ids.length / size), `number of pages of ${size}`);
          check(new Set(flat).size === flat.length, `paging by ${size} returned a checkpoint twice`);
          check(flat.join() === ids.join(), `paging by ${size}: ${firstDifference(flat, ids)}`);
        }
      },
    },
  ],
};
