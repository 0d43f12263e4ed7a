import type { BlobRecord, CheckpointStore, ChunkRecord, SerializedValue } from "@resumable/core";

import { check, checkEqual, collect, show } from "../helpers.js";
import { blob, cid, json, record, text, write } from "../records.js";
import type { Category, SubjectInfo } from "../types.js";

const storesOnly = (info: SubjectInfo): string | undefined =>
  info.kind === "store" ? undefined : "the factory returns a saver; these are rules of the CheckpointStore contract";

const refsOnly = (info: SubjectInfo): string | undefined =>
  storesOnly(info) ?? (info.capabilities.valueRefs ? undefined : "the store does not declare capabilities.valueRefs, so core never hands it references");

/** A value made of shared pieces: `0x00` marks each piece, `refs` names them in order. */
function withRefs(body: string, refs: string[]): SerializedValue {
  return { type: "json", data: text(body), refs };
}

function chunk(hash: string, data: string, index = 0): ChunkRecord {
  return { hash, index, data: text(data) };
}

const key = (b: { channel: string; version: string }) => `${b.channel}@${b.version}`;

/** The blobs a stored checkpoint came back with, as `channel@version` sorted. */
function blobKeys(blobs: BlobRecord[]): string[] {
  return blobs.map(key).sort();
}

async function chunksFor(store: CheckpointStore, threadId: string, returned: ChunkRecord[] | undefined, hashes: string[]): Promise<Map<string, string>> {
  const all = [...(returned ?? []), ...(await store.getChunks(threadId, hashes))];
  return new Map(all.map((c) => [`${c.hash}#${c.index}`, new TextDecoder().decode(c.data)]));
}

/**
 * What the store keeps of the records core hands it: references to shared pieces, delta roots and the
 * ranges of blobs they name, and chunks fetched many at a time. Checked on the store directly, so that a
 * store which drops a field fails here, naming it, rather than somewhere in a graph.
 */
export const storeRecords: Category = {
  id: "store-records",
  title: "Store records (references, delta ranges, chunk batches)",
  description:
    "The store keeps every field of the records core hands it: a value's piece references, a checkpoint's delta roots, blob base versions; getCheckpoint, listCheckpoints and getHistory return every blob of a delta range; getChunks returns the chunks of many hashes at once.",
  checks: [
    {
      name: "piece references of blobs and writes come back unchanged, and the pieces are found",
      skipUnless: refsOnly,
      async run(ctx) {
        const { store } = await ctx.open();
        const s = store!;
        const thread = ctx.threadId();
        const value = withRefs('[\u0000,"small",\u0000,\u0000]', ["pieceA", "pieceB", "pieceA"]);
        const rec = record(thread, cid(1), { channelVersions: { messages: "11.v" } });
        await s.putCheckpoint({
          record: rec,
          blobs: [{ channel: "messages", version: "11.v", value }],
          chunks: [chunk("pieceA", '{"a":1}'), chunk("pieceB", '"b"')],
        });
        await s.putWrites({
          threadId: thread,
          checkpointNs: "",
          checkpointId: cid(1),
          writes: [{ taskId: "task-1", idx: 0, channel: "messages", value: withRefs("[\u0000]", ["pieceC"]), taskPath: "" }],
          chunks: [chunk("pieceC", '{"c":3}')],
          mode: "ignore",
        });
        const got = await s.getCheckpoint({ threadId: thread, checkpointNs: "" });
        check(got, "getCheckpoint returned nothing after putCheckpoint");
        checkEqual(got.blobs.map((b) => b.value.refs), [["pieceA", "pieceB", "pieceA"]], "the refs of the blob");
        checkEqual([...got.blobs[0]!.value.data], [...value.data], "the bytes of a blob with refs");
        checkEqual(got.writes.map((w) => w.value.refs), [["pieceC"]], "the refs of the write");
        const pieces = await chunksFor(s, thread, got.chunks, ["pieceA", "pieceB", "pieceC"]);
        checkEqual(
          [pieces.get("pieceA#0"), pieces.get("pieceB#0"), pieces.get("pieceC#0")],
          ['{"a":1}', '"b"', '{"c":3}'],
          "the pieces, from getCheckpoint's chunks or getChunks",
        );
        const listed = await collect(s.listCheckpoints({ threadId: thread }));
        checkEqual(listed.map((l) => l.blobs.map((b) => b.value.refs)), [[["pieceA", "pieceB", "pieceA"]]], "the refs of the blob through listCheckpoints");
        const history = await s.getHistory({ threadId: thread, checkpointNs: "", checkpointId: "none-newer", channels: ["messages"] });
        checkEqual(history.ancestors.length, 0, "ancestors of a checkpoint that does not exist");
      },
    },
    {
      name: "a checkpoint's delta roots come back, with every blob of each range",
      skipUnless: (info) =>
        storesOnly(info) ??
        (info.capabilities.deltaRanges ? undefined : "the store does not declare capabilities.deltaRanges, so core never writes delta chains to it"),
      async run(ctx) {
        const { store } = await ctx.open();
        const s = store!;
        const thread = ctx.threadId();
        // A chain 12.a (whole) <- 13.b <- 15.d, and 14.x from an abandoned fork, and 16.z beyond the range.
        const chain: BlobRecord[] = [
          blob("log", "12.a", json(["one"])),
          { ...blob("log", "13.b", json(["two"])), baseVersion: "12.a" },
          { ...blob("log", "14.x", json(["fork"])), baseVersion: "13.b" },
          { ...blob("log", "15.d", json(["three"])), baseVersion: "13.b" },
          blob("log", "16.z", json(["later"])),
          blob("other", "11.q", json("other value")),
          blob("other", "13.q", json("not referenced")),
        ];
        await s.putCheckpoint({ record: record(thread, cid(1), { channelVersions: { log: "12.a", other: "11.q" } }), blobs: chain, chunks: [] });
        const deltaRoots = { log: "12.a" };
        await s.putCheckpoint({
          record: record(thread, cid(2), { parentCheckpointId: cid(1), channelVersions: { log: "15.d", other: "11.q" }, deltaRoots }),
          blobs: [],
          chunks: [],
        });
        await s.putCheckpoint({ record: record(thread, cid(3), { parentCheckpointId: cid(2), channelVersions: { log: "16.z", other: "11.q" } }), blobs: [], chunks: [] });
        const want = ["log@12.a", "log@13.b", "log@14.x", "log@15.d", "other@11.q"];
        const got = await s.getCheckpoint({ threadId: thread, checkpointNs: "", checkpointId: cid(2) });
        check(got, "getCheckpoint(cp 2) returned nothing");
        checkEqual(got.record.deltaRoots, deltaRoots, "the record's deltaRoots");
        checkEqual(blobKeys(got.blobs), want, "the blobs getCheckpoint returns for a delta range (every version from the root to the checkpoint's)");
        checkEqual(got.blobs.find((b) => b.version === "15.d")?.baseVersion, "13.b", "the base version of a delta blob");
        const listed = await collect(s.listCheckpoints({ threadId: thread, checkpointId: cid(2) }));
        checkEqual(listed.map((l) => blobKeys(l.blobs)), [want], "the blobs listCheckpoints returns for a delta range");
        const latest = await s.getCheckpoint({ threadId: thread, checkpointNs: "" });
        checkEqual(latest?.record.deltaRoots, undefined, "deltaRoots of a checkpoint that has none");
        checkEqual(blobKeys(latest?.blobs ?? []), ["log@16.z", "other@11.q"], "the blobs of a checkpoint without delta roots");
        const history = await s.getHistory({ threadId: thread, checkpointNs: "", checkpointId: cid(3), channels: ["log"] });
        const seed = history.ancestors.find((a) => a.checkpointId === cid(2));
        check(seed, `getHistory from cp 3 did not return its parent cp 2 (got ${show(history.ancestors.map((a) => a.checkpointId))})`);
        checkEqual(seed.deltaRoots, deltaRoots, "the deltaRoots of a history ancestor");
        checkEqual(blobKeys(seed.blobs), ["log@12.a", "log@13.b", "log@14.x", "log@15.d"], "the blobs getHistory returns for an ancestor whose seed is a delta");
      },
    },
    {
      name: "getChunks returns every chunk of many hashes in one call, and nothing of another thread",
      skipUnless: storesOnly,
      async run(ctx) {
        const { store } = await ctx.open();
        const s = store!;
        const thread = ctx.threadId();
        await s.putCheckpoint({
          record: record(thread, cid(1)),
          blobs: [],
          chunks: [chunk("h1", "a", 0), chunk("h1", "b", 1), chunk("h2", "c"), chunk("h3", "d")],
        });
        await s.putCheckpoint({ record: record(`${thread}-other`, cid(1)), blobs: [], chunks: [chunk("h4", "other")] });
        const got = (await s.getChunks(thread, ["h1", "h2", "h4", "missing", "h1"])).map((c) => `${c.hash}#${c.index}=${new TextDecoder().decode(c.data)}`).sort();
        checkEqual(got, ["h1#0=a", "h1#1=b", "h2#0=c"], "getChunks(thread, [h1, h2, h4 of another thread, missing, h1 again])");
        checkEqual(await s.getChunks(thread, []), [], "getChunks with no hashes");
        const writes = [write("task", 0, "c", 1)];
        await s.putWrites({ threadId: thread, checkpointNs: "", checkpointId: cid(1), writes, chunks: [chunk("h5", "e")], mode: "ignore" });
        checkEqual((await s.getChunks(thread, ["h5"])).length, 1, "a chunk stored by putWrites");
      },
    },
  ],
};
