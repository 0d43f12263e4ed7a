// Filters and ids are data, never operators: metadata keys that start with `$` or contain `.`, and
// values that look like query operators, match only metadata holding exactly them; ids that are not
// strings are refused. Through the saver, as a user reaches the store.
import type { RunnableConfig } from "@langchain/core/runnables";
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import { InvalidConfigError } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { MongoDBSaver } from "../src/index.js";
import { HANDLERS, TestServer, threadId } from "./helpers.js";

/** Metadata of the checkpoints, by name; each filter below must find exactly the ones it names. */
const ROWS: Record<string, Record<string, unknown>> = {
  plain: { source: "loop", user: "alice", role: "admin" },
  gt: { source: "loop", user: { $gt: "" } },
  ne: { source: "loop", user: { $ne: null } },
  regex: { source: "loop", user: { $regex: ".*" }, role: { $in: ["admin"] } },
  where: { source: "loop", $where: "function () { return true; }" },
  dollarKey: { source: "loop", $gt: "", "$or": [{ user: "alice" }] },
  dotted: { source: "loop", "user.name": "alice", "a.b": { "c.d": 1 } },
  nested: { source: "loop", user: { name: "alice", "$exists": true } },
  expr: { source: "loop", $expr: { $eq: [1, 1] } },
};

const CASES: Array<{ name: string; filter: Record<string, unknown>; want: string[] }> = [
  { name: '{"$gt": ""} is a value, not an operator', filter: { user: { $gt: "" } }, want: ["gt"] },
  { name: '{"$ne": null} is a value', filter: { user: { $ne: null } }, want: ["ne"] },
  { name: '{"$regex": ".*"} is a value', filter: { user: { $regex: ".*" } }, want: ["regex"] },
  { name: '{"$in": [...]} is a value', filter: { role: { $in: ["admin"] } }, want: ["regex"] },
  { name: "a $where key is a key", filter: { $where: "function () { return true; }" }, want: ["where"] },
  { name: "a $where key with another value matches nothing", filter: { $where: "1 == 1" }, want: [] },
  { name: "$-prefixed keys are keys", filter: { $gt: "" }, want: ["dollarKey"] },
  { name: "an $or key is a key, with its value", filter: { $or: [{ user: "alice" }] }, want: ["dollarKey"] },
  { name: "a $expr key is a key", filter: { $expr: { $eq: [1, 1] } }, want: ["expr"] },
  { name: "a dotted key is one key, not a path", filter: { "user.name": "alice" }, want: ["dotted"] },
  { name: "dots inside nested keys", filter: { "a.b": { "c.d": 1 } }, want: ["dotted"] },
  { name: "a nested $exists is a value", filter: { user: { name: "alice", $exists: true } }, want: ["nested"] },
  { name: "an operator value does not match plain values", filter: { user: { $gt: "a" } }, want: [] },
  { name: "plain values still match", filter: { user: "alice" }, want: ["plain"] },
  { name: "several keys, one of them $-prefixed", filter: { source: "loop", $gt: "" }, want: ["dollarKey"] },
];

describe.each(HANDLERS)("operator injection on FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  let saver: MongoDBSaver;
  beforeAll(async () => {
    await server.init();
    saver = new MongoDBSaver({ client: server.client, dbName: await server.database("inject") });
    await saver.setup();
  });
  afterAll(() => server.closeAll());

  async function fill(thread: string): Promise<Map<string, string>> {
    const ids = new Map<string, string>();
    let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    let i = 0;
    for (const [name, metadata] of Object.entries(ROWS)) {
      i += 1;
      const checkpoint: Checkpoint = { ...emptyCheckpoint(), id: `cp-${String(i).padStart(3, "0")}` };
      config = await saver.put(config, checkpoint, { step: i, parents: {}, ...metadata } as never, {});
      ids.set(checkpoint.id, name);
    }
    return ids;
  }

  it("matches metadata keys and values literally: $-prefixed and dotted keys, operator-shaped values", async () => {
    const thread = threadId("inject");
    const names = await fill(thread);
    const failures: string[] = [];
    for (const c of CASES) {
      for (const scope of [{ thread_id: thread }, {}]) {
        const got: string[] = [];
        for await (const tuple of saver.list({ configurable: scope }, { filter: c.filter })) {
          const name = names.get(tuple.config.configurable?.checkpoint_id as string);
          if (tuple.config.configurable?.thread_id === thread && name) got.push(name);
        }
        if (got.sort().join() !== [...c.want].sort().join()) failures.push(`${c.name} (${scope.thread_id ? "one thread" : "every thread"}): got ${JSON.stringify(got)}`);
      }
      // The store's own filter must be exact too: core re-checks, but the store must not return less.
      const native = [];
      for await (const stored of saver.store.listCheckpoints({ threadId: thread, checkpointNs: "", filter: c.filter })) native.push(names.get(stored.record.checkpointId));
      if (native.sort().join() !== [...c.want].sort().join()) failures.push(`${c.name} (store): got ${JSON.stringify(native)}`);
    }
    expect(failures).toEqual([]);
    // The metadata itself comes back as it was stored, operator-shaped keys and all.
    const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_id: [...names].find(([, n]) => n === "dollarKey")![0] } });
    expect(tuple?.metadata).toMatchObject(ROWS.dollarKey!);
  });

  it("refuses ids that are operators instead of strings, and reads nothing", async () => {
    const thread = threadId("inject-ids");
    await fill(thread);
    const operators: unknown[] = [{ $ne: null }, { $gt: "" }, { $regex: ".*" }, { $where: "true" }, ["a"]];
    for (const operator of operators) {
      const configs: RunnableConfig[] = [
        { configurable: { thread_id: operator } },
        { configurable: { thread_id: thread, checkpoint_ns: operator } },
        { configurable: { thread_id: thread, checkpoint_id: operator } },
      ];
      for (const config of configs) {
        await expect(saver.getTuple(config), JSON.stringify(config)).rejects.toBeInstanceOf(InvalidConfigError);
        await expect(
          (async () => {
            for await (const _ of saver.list(config)) return "listed";
            return "nothing";
          })(),
        ).rejects.toBeInstanceOf(InvalidConfigError);
      }
      await expect(
        (async () => {
          for await (const _ of saver.list({ configurable: { thread_id: thread } }, { before: { configurable: { checkpoint_id: operator } } })) return "listed";
          return "nothing";
        })(),
      ).rejects.toBeInstanceOf(InvalidConfigError);
      await expect(saver.deleteThread(operator as string)).rejects.toBeInstanceOf(InvalidConfigError);
    }
    // Strings that look like operators are ids like any other: nothing of this thread matches them.
    expect(await saver.getTuple({ configurable: { thread_id: '{"$ne": null}' } })).toBeUndefined();
    expect(await saver.getTuple({ configurable: { thread_id: thread, checkpoint_id: '{"$gt": ""}' } })).toBeUndefined();
    // The thread survived every attempt.
    let left = 0;
    for await (const _ of saver.list({ configurable: { thread_id: thread } })) left += 1;
    expect(left).toBe(Object.keys(ROWS).length);
  });
});
