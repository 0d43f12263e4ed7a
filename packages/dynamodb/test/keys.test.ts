// The key schema: ids that contain the key delimiter ("|"), the escape ("\u0001"), length-like digits
// or hash-like prefixes cannot make two records share a key or leak into another's range, on either
// emulator; worst-case ids at core's limits fit DynamoDB's key limits.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DynamoDBSaver, type DynamoDBStore } from "../src/index.js";
import { INLINE_NS_BYTES, blobKey, checkpointKey, chunkKey, nsKey, ordered, parseBlobKey, parseCheckpointKey, parseChunkKey, parseWriteKey, writeCommitKey, writeKey, writesPrefix } from "../src/keys.js";
import { EMULATORS, clientFor, collect, freshStore, threadId } from "./helpers.js";

const bytes = (s: string) => Buffer.from(s, "utf8");
const byCodePoint = (a: string, b: string) => Buffer.compare(bytes(a), bytes(b));

/** Strings of 0-6 characters from an alphabet of the characters the encoding treats specially. */
function adversarialStrings(count: number): string[] {
  const alphabet = ["\u0001", "\u0002", "|", "0", "3", "#", "a", "é", "\uffff", "😀"];
  let x = 12345;
  const next = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff), x);
  const out = new Set<string>([""]);
  while (out.size < count) out.add(Array.from({ length: next() % 7 }, () => alphabet[next() % alphabet.length]).join(""));
  return [...out];
}

describe("key encoding", () => {
  const strings = adversarialStrings(400);

  it("ordered() keeps code-point order and is prefix-free", () => {
    const sorted = [...strings].sort(byCodePoint);
    expect([...strings].sort((a, b) => byCodePoint(ordered(a), ordered(b)))).toEqual(sorted);
    const prefixes = strings.flatMap((a) => strings.filter((b) => a !== b && ordered(b).startsWith(ordered(a))).map((b) => [a, b]));
    expect(prefixes).toEqual([]);
  });

  it("namespace components are prefix-free, inline or hashed", () => {
    const namespaces = [...strings, "x".repeat(INLINE_NS_BYTES), "x".repeat(INLINE_NS_BYTES + 1), "é".repeat(101), "é".repeat(100)];
    const keys = namespaces.map((ns) => `${nsKey(ns)}|`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.flatMap((a) => keys.filter((b) => a !== b && b.startsWith(a)))).toEqual([]);
  });

  it("every key parses back to the ids it was built from", () => {
    for (const s of strings.slice(0, 60)) {
      const id = `id${s}`;
      for (const ns of ["", s, "n".repeat(300)]) {
        expect(parseCheckpointKey(checkpointKey(ns, id))).toEqual({ ns: ns.length > INLINE_NS_BYTES ? undefined : ns, checkpointId: id });
        expect(parseBlobKey(blobKey(ns, s, id))).toEqual({ channel: s, version: id });
        expect(parseWriteKey(writeKey(ns, id, s, -3))).toEqual({ checkpointId: id, taskId: s, idx: -3 });
        // A batch commit sits in its checkpoint's write range and never shares a prefix with a write.
        const commit = writeCommitKey(ns, id, "tok");
        expect(commit.startsWith(writesPrefix(ns, id))).toBe(true);
        expect(writeKey(ns, id, s, 0).startsWith(commit.slice(0, writesPrefix(ns, id).length + 1))).toBe(false);
      }
      expect(parseChunkKey(chunkKey(id, 12))).toEqual({ hash: id, index: 12 });
    }
  });

  it("keys at core's id limits, of the worst characters, stay within DynamoDB's 1024-byte sort key", () => {
    const ns = "n".repeat(INLINE_NS_BYTES);
    const id256 = "\u0001".repeat(256); // doubled by the escape
    const task = "€".repeat(85); // 255 bytes
    expect(bytes(writeKey(ns, id256, task, -2147483648)).byteLength).toBeLessThanOrEqual(1024);
    expect(bytes(blobKey(ns, "€".repeat(85), "€".repeat(85))).byteLength).toBeLessThanOrEqual(1024);
    expect(bytes(checkpointKey("n".repeat(512), "€".repeat(85))).byteLength).toBeLessThanOrEqual(1024);
  });
});

/** A checkpoint whose channels all have version `version` (blobs are keyed by channel and version). */
function checkpoint(id: string, values: Record<string, unknown>, version: number): Checkpoint {
  return { v: 4, id, ts: new Date(0).toISOString(), channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, version])), versions_seen: {} };
}

describe.each(EMULATORS)("ids containing the key delimiter on %s", (emulator) => {
  let client: DynamoDBClient;
  let store: DynamoDBStore;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    client = await clientFor(emulator);
    ({ store, drop } = await freshStore(client, "keys"));
  });
  afterAll(async () => {
    await drop();
    client.destroy();
  });

  const base = threadId("delim");
  // Each id looks like another's key, or like another id followed by the delimiter and more key.
  const threads = [`${base}`, `${base}|`, `${base}|c|000|x`, `${base}\u0001\u0001`];
  const namespaces = ["", "|", "a", "a|000|", "001|", "000", "a\u0001\u0001|", "#".repeat(44), "x".repeat(INLINE_NS_BYTES), "x".repeat(INLINE_NS_BYTES + 1)];
  const checkpointIds = ["c", "c|001t|0", "c\u0001\u0001|003t|0|"];
  const tasks = ["t", "t|0", "003t|0"];
  const channels = ["ch", "ch|001x", "|ch"];
  const label = (...parts: string[]) => JSON.stringify(parts);

  it("never share a key: every thread, namespace, checkpoint, task and channel reads back its own", { timeout: 300_000 }, async () => {
    const saver = new DynamoDBSaver(store);
    for (const thread of threads) {
      for (const ns of namespaces) {
        let parent: string | undefined;
        for (const [n, id] of checkpointIds.entries()) {
          const config = { configurable: { thread_id: thread, checkpoint_ns: ns, ...(parent ? { checkpoint_id: parent } : {}) } };
          const values = Object.fromEntries(channels.map((ch) => [ch, label(thread, ns, id, ch)]));
          const saved = await saver.put(config, checkpoint(id, values, n + 1), { source: "loop", step: 0, parents: {}, who: label(thread, ns, id) } as never, Object.fromEntries(channels.map((c) => [c, n + 1])));
          await Promise.all(tasks.map((task) => saver.putWrites(saved, channels.map((ch) => [ch, label(thread, ns, id, task, ch)]), task)));
          parent = id;
        }
      }
    }
    const fresh = new DynamoDBSaver(store);
    for (const thread of threads) {
      for (const ns of namespaces) {
        const listed = await collect(fresh.list({ configurable: { thread_id: thread, checkpoint_ns: ns } }));
        // Newest first by id, as strings: the escape and "|" sort below letters.
        expect(listed.map((t) => t.config.configurable?.checkpoint_id)).toEqual([...checkpointIds].sort(byCodePoint).reverse());
        for (const tuple of listed) {
          const id = tuple.config.configurable?.checkpoint_id as string;
          expect(tuple.config.configurable?.thread_id).toBe(thread);
          expect(tuple.config.configurable?.checkpoint_ns).toBe(ns);
          expect((tuple.metadata as Record<string, unknown>)["who"]).toBe(label(thread, ns, id));
          expect(tuple.checkpoint.channel_values).toEqual(Object.fromEntries(channels.map((ch) => [ch, label(thread, ns, id, ch)])));
          expect(new Set(tuple.pendingWrites?.map(([task, ch, value]) => `${label(task, ch)}=${String(value)}`))).toEqual(
            new Set(tasks.flatMap((task) => channels.map((ch) => `${label(task, ch)}=${label(thread, ns, id, task, ch)}`))),
          );
        }
      }
      expect(await collect(fresh.list({ configurable: { thread_id: thread } }))).toHaveLength(namespaces.length * checkpointIds.length);
    }
    // Deleting one thread leaves the threads whose ids extend it, delimiter and all.
    await fresh.deleteThread(threads[0]!);
    expect(await collect(fresh.list({ configurable: { thread_id: threads[0] } }))).toHaveLength(0);
    for (const thread of threads.slice(1)) expect(await collect(fresh.list({ configurable: { thread_id: thread } }))).toHaveLength(namespaces.length * checkpointIds.length);
  });
});
