import { records } from "@resumable/conformance";
import { afterAll, describe, expect, it } from "vitest";

import { RedisSaver, RedisStore } from "../src/index.js";
import { TestClients, prefix } from "./helpers.js";

const { record, blob, json, cid, write, decode } = records;
const clients = new TestClients();
afterAll(() => clients.closeAll());

/**
 * (thread, namespace) pairs that a naive `prefix:thread:ns` layout, a hash tag left unescaped, or an
 * escape that is not itself escaped would merge, split across slots, or let one escape into another.
 */
const SCOPES: Array<[string, string]> = [
  ["a:b", ""],
  ["a", "b"],
  ["a", "b:c"],
  ["a:b", "c"],
  ["a", ""],
  ["{a}", ""],
  ["}", ""],
  ["{", ""],
  ["{}", ""],
  ["a}b{c", "x}{y"],
  ["%7B", ""],
  ["%", "%3A"],
  ["%%", ":"],
  ["*", "*"],
  ["a*", "?"],
  ["[ab]", "\\"],
  [" ", " "],
  ["a b", "c d"],
  ["ключ 🙂", "名前:空間"],
  ["e\u0301", ""], // NFD
  ["\u00e9", ""], // NFC: another id
  ["a:c:b", ""],
  ["a", "c:b"],
  ["a\u0001b", "\u0001"],
];

async function fill(store: RedisStore, tag: string): Promise<void> {
  for (const [i, [threadId, checkpointNs]] of SCOPES.entries()) {
    const id = cid(1);
    await store.putCheckpoint({
      record: record(threadId, id, { checkpointNs, channelVersions: { "ch:1": "1:v" }, metadataJson: { source: "loop", step: 0, who: `${tag}-${i}` } }),
      blobs: [blob("ch:1", "1:v", json(`value-${i}`))],
      chunks: [{ hash: `h${i}`, index: 0, data: new TextEncoder().encode(`piece-${i}`) }],
    });
    await store.putWrites({ threadId, checkpointNs, checkpointId: id, writes: [write("task:1", 0, "ch:1", `write-${i}`)], chunks: [], mode: "ignore" });
  }
}

async function expectAll(store: RedisStore, present: (i: number) => boolean, tag: string): Promise<void> {
  for (const [i, [threadId, checkpointNs]] of SCOPES.entries()) {
    const got = await store.getCheckpoint({ threadId, checkpointNs });
    if (!present(i)) {
      expect(got, `scope ${i} ${JSON.stringify([threadId, checkpointNs])} after delete`).toBeUndefined();
      continue;
    }
    expect(got?.record.threadId).toBe(threadId);
    expect(got?.record.checkpointNs).toBe(checkpointNs);
    expect(got?.record.metadataJson.who, `scope ${i} ${JSON.stringify([threadId, checkpointNs])}`).toBe(`${tag}-${i}`);
    expect(got?.blobs.map((b) => decode(b.value))).toEqual([`value-${i}`]);
    expect(got?.writes.map((w) => decode(w.value))).toEqual([`write-${i}`]);
    expect((await store.getChunks(threadId, [`h${i}`])).map((c) => new TextDecoder().decode(c.data))).toEqual([`piece-${i}`]);
    const listed = [];
    for await (const item of store.listCheckpoints({ threadId })) listed.push([item.record.checkpointNs, item.record.metadataJson.who]);
    expect(listed).toEqual(SCOPES.flatMap(([t, ns], j) => (t === threadId && present(j) ? [[ns, `${tag}-${j}`]] : [])).sort((x, y) => Buffer.compare(Buffer.from(x[0]!), Buffer.from(y[0]!))));
  }
}

for (const kind of ["standalone", "cluster"] as const) {
  describe(`ids cannot collide or escape (${kind})`, () => {
    it("keeps every (thread, namespace) apart, and deleteThread removes exactly one thread", async () => {
      const client = kind === "standalone" ? await clients.standalone() : await clients.cluster();
      const store = new RedisStore(client, { keyPrefix: prefix(`ids-${kind}`) });
      await store.setup();
      await fill(store, kind);
      await expectAll(store, () => true, kind);
      // Every thread comes back from the thread index exactly once, with its own namespaces.
      const threads = new Map<string, string[]>();
      for await (const item of store.listCheckpoints({})) threads.set(item.record.threadId, [...(threads.get(item.record.threadId) ?? []), item.record.checkpointNs]);
      expect([...threads.keys()].sort()).toEqual([...new Set(SCOPES.map(([t]) => t))].sort());
      // Deleting thread "a" leaves "a:b", "a:c:b", "{a}", "a*"... whole.
      await store.deleteThread("a");
      await expectAll(store, (i) => SCOPES[i]![0] !== "a", kind);
      for (const threadId of new Set(SCOPES.map(([t]) => t))) await store.deleteThread(threadId);
      await expectAll(store, () => false, kind);
    });
  });
}

describe("the keys of a thread", () => {
  it("all start with the thread's base key, and none is left after deleteThread", async () => {
    const client = await clients.standalone();
    const keyPrefix = prefix("ids-keys");
    const store = new RedisStore(client, { keyPrefix });
    await fill(store, "keys");
    // SCAN is fine in a test: it proves what the store never needs to do.
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, batch] = await client.scan(cursor, "MATCH", `${keyPrefix}*`, "COUNT", 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== "0");
    const bases = new Set(SCOPES.map(([t]) => `${keyPrefix}{${t.replace(/[%{}:*?[\]\\]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}}`));
    const stray = keys.filter((k) => k !== `${keyPrefix}threads` && ![...bases].some((b) => k.startsWith(`${b}:`)));
    expect(stray).toEqual([]);
    // Each key's hash tag is its whole thread id, escaped: never empty, never cut short by a brace.
    for (const key of keys.filter((k) => k !== `${keyPrefix}threads`)) {
      const tag = key.slice(key.indexOf("{") + 1, key.indexOf("}", key.indexOf("{") + 1));
      expect(bases.has(`${keyPrefix}{${tag}}`), key).toBe(true);
    }
    for (const threadId of new Set(SCOPES.map(([t]) => t))) await store.deleteThread(threadId);
    const left = await client.scan("0", "MATCH", `${keyPrefix}*`, "COUNT", 10_000);
    expect(left[1]).toEqual([]);
  });

  it("round-trips such ids through the saver too", async () => {
    const saver = new RedisSaver(await clients.standalone(), { keyPrefix: prefix("ids-saver") });
    for (const [threadId, ns] of SCOPES) {
      const config = { configurable: { thread_id: threadId, checkpoint_ns: ns } };
      const saved = await saver.put(config, { v: 4, id: "1ef-0", ts: "2026-01-01T00:00:00Z", channel_values: { [ns || "x"]: threadId }, channel_versions: { [ns || "x"]: 1 }, versions_seen: {} }, { source: "input", step: -1, parents: {} }, { [ns || "x"]: 1 });
      const back = await saver.getTuple(saved);
      expect(back?.checkpoint.channel_values).toEqual({ [ns || "x"]: threadId });
    }
  });
});
