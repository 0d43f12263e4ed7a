import type { RunnableConfig } from "@langchain/core/runnables";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { RUNTIME_METADATA_KEYS } from "@resumable/core";

import { checkEqual, collect, idOf, metadata, putCheckpoint, show, threadConfig } from "../helpers.js";
import type { Category } from "../types.js";

const QUOTE_KEY = `it's a "key" \\ with % and _ and $.dots`;
const UNICODE_KEY = "ключ 🙂 𝄞";
const INJECTION = `' OR 1=1 --"; DROP TABLE checkpoints; {"$ne": null}`;

/** Five checkpoints in one thread, with metadata chosen so that every filter below matches a known set. */
const ROWS: Array<Record<string, unknown>> = [
  { source: "input", step: -1, user: { id: "u1", tags: ["a", "b"] }, [QUOTE_KEY]: `va"l'ue`, [UNICODE_KEY]: "значение 🙂" },
  // The runtime's own keys (a DeltaChannel's counters, a subgraph's parents) with usual and unusual values.
  { source: "loop", step: 0, user: { id: "u1", tags: ["a", "b"] }, [QUOTE_KEY]: INJECTION, [UNICODE_KEY]: "другое", counters_since_delta_snapshot: { messages: [1, 2] }, delta_writes_versioned: true },
  { source: "loop", step: 1, user: { id: "u2", tags: ["b", "a"] }, [QUOTE_KEY]: `va"l'ue`, flag: false, score: 0, delta_writes_versioned: false },
  { source: "loop", step: 2, user: { id: "u1", tags: ["a", "b"], extra: { deep: [1, { x: "y" }] } }, flag: true, score: "0", parents: { "": "root-1" } },
  { source: "update", step: 2, user: { tags: ["a", "b"], id: "u1" }, [UNICODE_KEY]: "значение 🙂", flag: false, score: 0 },
];

async function fill(saver: BaseCheckpointSaver, thread: string): Promise<string[]> {
  const ids: string[] = [];
  let parent: RunnableConfig = threadConfig(thread);
  for (const [i, extra] of ROWS.entries()) {
    parent = await putCheckpoint(saver, parent, { i }, { versions: { i: i + 1 }, metadata: metadata(0, extra) });
    ids.push(idOf(parent));
  }
  // A second thread with matching metadata: a filter must not leak across threads.
  await putCheckpoint(saver, threadConfig(`${thread}-other`), { i: 0 }, { metadata: metadata(0, ROWS[1]) });
  return ids;
}

/** Which rows (by index, newest first) a filter must return. */
const CASES: Array<{ name: string; filter: Record<string, unknown>; rows: number[] }> = [
  { name: "one key", filter: { source: "loop" }, rows: [3, 2, 1] },
  { name: "several keys", filter: { source: "loop", step: 1 }, rows: [2] },
  { name: "a nested object (keys in any order)", filter: { user: { tags: ["a", "b"], id: "u1" } }, rows: [4, 1, 0] },
  { name: "a nested object inside a nested object", filter: { user: { id: "u1", tags: ["a", "b"], extra: { deep: [1, { x: "y" }] } } }, rows: [3] },
  { name: "array order matters", filter: { user: { id: "u2", tags: ["b", "a"] } }, rows: [2] },
  { name: "no match", filter: { source: "fork" }, rows: [] },
  { name: "a key no checkpoint has", filter: { missing: "x" }, rows: [] },
  { name: "a key with quotes, backslash, % and _", filter: { [QUOTE_KEY]: `va"l'ue` }, rows: [2, 0] },
  { name: "an injection attempt as a value", filter: { [QUOTE_KEY]: INJECTION }, rows: [1] },
  { name: "unicode keys and values", filter: { [UNICODE_KEY]: "значение 🙂" }, rows: [4, 0] },
  { name: "false is not missing", filter: { flag: false }, rows: [4, 2] },
  { name: "the number 0 is not the string \"0\"", filter: { score: 0 }, rows: [4, 2] },
  { name: "several keys, one of them nested", filter: { step: 2, user: { id: "u1", tags: ["a", "b"] } }, rows: [4] },
  { name: "the runtime's parents, empty", filter: { parents: {} }, rows: [4, 2, 1, 0] },
  { name: "the runtime's parents, naming a root checkpoint", filter: { parents: { "": "root-1" } }, rows: [3] },
  { name: "a DeltaChannel's counters", filter: { counters_since_delta_snapshot: { messages: [1, 2] } }, rows: [1] },
  { name: "delta_writes_versioned true and false", filter: { delta_writes_versioned: true }, rows: [1] },
  { name: "the runtime's keys with another key", filter: { parents: {}, flag: false }, rows: [4, 2] },
];

/** Metadata filters in `list`: deep equality per key, on data that would break naive query building. */
export const metadataFilter: Category = {
  id: "metadata-filter",
  title: "Metadata filters (several keys, nested values, quotes, unicode)",
  description:
    "list({ filter }) returns exactly the checkpoints whose metadata deep-equals the filter on every key: several keys, nested objects, no match, quotes, unicode, typed values; with limit, the newest matches.",
  checks: [
    {
      name: "each filter returns exactly the matching checkpoints, newest first",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const ids = await fill(saver, thread);
        const failures: string[] = [];
        for (const c of CASES) {
          const got = (await collect(saver.list(threadConfig(thread), { filter: c.filter }))).map((t) => idOf(t.config));
          const want = c.rows.map((r) => ids[r]!);
          if (got.join() !== want.join()) {
            failures.push(`${c.name} ${show(c.filter)}: expected rows ${show(c.rows)}, got rows ${show(got.map((id) => ids.indexOf(id)))}`);
          }
        }
        checkEqual(failures, [], "filters that returned the wrong checkpoints");
      },
    },
    {
      name: "metadata reads back exactly as it was put, the runtime's own keys included",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const ids = await fill(saver, thread);
        for (const [i, extra] of ROWS.entries()) {
          const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "", checkpoint_id: ids[i] } });
          // Keys in sorted order, as canonical JSON keeps them.
          const want = metadata(0, extra) as Record<string, unknown>;
          checkEqual(tuple?.metadata, Object.fromEntries(Object.keys(want).sort().map((k) => [k, want[k]])), `the metadata of row ${i}`);
          checkEqual(Object.keys(tuple?.metadata ?? {}), Object.keys(want).sort(), `the key order of row ${i}'s metadata`);
        }
      },
    },
    {
      name: "a filter with a limit returns the newest matches, not the first rows filtered afterwards",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const ids = await fill(saver, thread);
        const got = (await collect(saver.list(threadConfig(thread), { filter: { user: { id: "u1", tags: ["a", "b"] } }, limit: 2 }))).map((t) =>
          idOf(t.config),
        );
        checkEqual(got, [ids[4], ids[1]], "list({ filter: { user }, limit: 2 })");
      },
    },
    {
      name: "the store's native filter returns exactly the matching records",
      skipUnless: (info) =>
        info.kind !== "store"
          ? "the factory returns a saver, not a CheckpointStore"
          : info.capabilities.nativeMetadataFilter
            ? undefined
            : "the store does not filter natively (capabilities.nativeMetadataFilter is false); core filters instead",
      async run(ctx) {
        const opened = await ctx.open();
        const thread = ctx.threadId();
        const ids = await fill(opened.saver, thread);
        const failures: string[] = [];
        // The saver never hands a store a filter on the runtime's own keys: it may keep them out of metadataJson.
        for (const c of CASES.filter((c) => !Object.keys(c.filter).some((key) => RUNTIME_METADATA_KEYS.has(key)))) {
          const got = (await collect(opened.store!.listCheckpoints({ threadId: thread, checkpointNs: "", filter: c.filter }))).map(
            (r) => r.record.checkpointId,
          );
          const want = c.rows.map((r) => ids[r]!);
          if (got.join() !== want.join()) failures.push(`${c.name}: expected rows ${show(c.rows)}, got ${show(got.map((id) => ids.indexOf(id)))}`);
        }
        checkEqual(failures, [], "native filters that returned the wrong records");
      },
    },
    {
      name: "a Date in a filter matches metadata that held that Date, on the store as in core",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const at = new Date("2026-11-30T08:15:00.250Z");
        const first = await putCheckpoint(saver, threadConfig(thread), { i: 0 }, { metadata: metadata(0, { at }) });
        await putCheckpoint(saver, first, { i: 1 }, { versions: { i: 2 }, metadata: metadata(1, { at: new Date("2026-11-30T08:15:01Z") }) });
        const got = (await collect(saver.list(threadConfig(thread), { filter: { at } }))).map((t) => idOf(t.config));
        checkEqual(got, [idOf(first)], "list({ filter: { at: Date } })");
        const byText = (await collect(saver.list(threadConfig(thread), { filter: { at: at.toISOString() } }))).map((t) => idOf(t.config));
        checkEqual(byText, [idOf(first)], "list({ filter: { at: ISO string } })");
      },
    },
    {
      name: "an own __proto__ key in a filter matches only metadata with that key",
      async run(ctx) {
        const { saver } = await ctx.open();
        const thread = ctx.threadId();
        const withKey = JSON.parse('{"__proto__": {"role": "admin"}}') as Record<string, unknown>;
        const first = await putCheckpoint(saver, threadConfig(thread), { i: 0 }, { metadata: metadata(0, { role: "user" }) });
        const second = await putCheckpoint(saver, first, { i: 1 }, { versions: { i: 2 }, metadata: metadata(1, withKey) });
        const match = (await collect(saver.list(threadConfig(thread), { filter: JSON.parse('{"__proto__": {"role": "admin"}}') as Record<string, unknown> }))).map(
          (t) => idOf(t.config),
        );
        checkEqual(match, [idOf(second)], 'list({ filter: { "__proto__": { role: "admin" } } })');
        const none = await collect(saver.list(threadConfig(thread), { filter: JSON.parse('{"__proto__": {"role": "nobody"}}') as Record<string, unknown> }));
        checkEqual(none.length, 0, 'checkpoints matching { "__proto__": { role: "nobody" } }');
      },
    },
  ],
};
