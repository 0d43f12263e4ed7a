// importCheckpoints from any saver into any saver: LangChain's in-memory saver (integer versions that
// forks share), a saver with LangChain Python's string versions ("000…05.0.123"), and ours, into ours
// and into LangChain's. Every imported thread must read back as the source reads it, resume, and a
// second import must change nothing.
import { Annotation, Command, END, START, StateGraph, interrupt, type StateSnapshot } from "@langchain/langgraph";
import { MemorySaver, type BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";

import { CheckpointImportError, MemoryStore, ResumableSaver, importCheckpoints, type ImportProgress } from "../src/index.js";
import { THREADS, dump, expectResumes, expectSameThreads, writeScenarios } from "./fixtures/import-scenarios.js";

/** Versions as LangChain's Python savers write them: a padded counter and a random fraction. */
class StringVersionSaver extends MemorySaver {
  override getNextVersion(current: number | undefined): number {
    const previous: unknown = current;
    const n = typeof previous === "string" ? Number.parseInt(previous.split(".")[0]!, 10) : typeof previous === "number" ? previous : 0;
    return `${String(n + 1).padStart(32, "0")}.${Math.random()}` as unknown as number;
  }
}

const ours = () => new ResumableSaver(new MemoryStore());

/** Versions that order as strings but start with a letter: `v00000001`, `v00000002`... */
class LetterVersionSaver extends MemorySaver {
  override getNextVersion(current: number | undefined): number {
    const previous: unknown = current;
    const n = typeof previous === "string" ? Number.parseInt(previous.slice(1), 10) : 0;
    return `v${String(n + 1).padStart(8, "0")}` as unknown as number;
  }
}

/** Versions whose leading digits are not their counter: a base-36 length digit, then the counter in base 36. */
class LengthPrefixedVersionSaver extends MemorySaver {
  override getNextVersion(current: number | undefined): number {
    const previous: unknown = current;
    const n = typeof previous === "string" ? Number.parseInt(previous.slice(1, 1 + Number.parseInt(previous[0]!, 36)).split(".")[0]!, 36) : 0;
    const digits = (n + 1).toString(36);
    return `${digits.length.toString(36)}${digits}.${Math.random().toString(36).slice(2, 8)}` as unknown as number;
  }
}

/** Counts to 40, one step per checkpoint, then asks; resumed, it answers and stops. */
function countingGraph(checkpointer: BaseCheckpointSaver) {
  const State = Annotation.Root({ n: Annotation<number>(), answer: Annotation<string>() });
  return new StateGraph(State)
    .addNode("inc", (s) => ({ n: (s.n ?? 0) + 1 }))
    .addNode("ask", () => ({ answer: String(interrupt("done counting?")) }))
    .addEdge(START, "inc")
    .addConditionalEdges("inc", (s) => (s.n < 40 ? "inc" : "ask"))
    .addEdge("ask", END)
    .compile({ checkpointer });
}

const sources: Array<[string, () => BaseCheckpointSaver]> = [
  ["LangChain's MemorySaver (integer versions)", () => new MemorySaver()],
  ["a saver with LangChain Python's string versions", () => new StringVersionSaver()],
  ["ResumableSaver (unique string versions)", ours],
];

describe("importCheckpoints", () => {
  describe.each(sources)("from %s into ResumableSaver", (_name, makeSource) => {
    it("copies every thread, namespace, checkpoint and pending write; reads back the same; resumes; a second run changes nothing", async () => {
      const source = makeSource();
      await writeScenarios(source);
      const target = ours();
      const events: ImportProgress[] = [];
      const result = await importCheckpoints(source, target, { onProgress: (p) => events.push(p) });
      expect(result.threads).toBe(3);
      expect(result.imported).toBe(result.checkpoints);
      expect(result.skipped).toBe(0);
      expect(result.writeBatches).toBeGreaterThan(0);

      // Progress: one event per checkpoint and one per thread, counting up to the totals.
      expect(events.filter((e) => e.event === "thread").map((e) => [e.threadsDone, e.threadsTotal])).toEqual([
        [1, 3],
        [2, 3],
        [3, 3],
      ]);
      expect(events.filter((e) => e.event === "checkpoint")).toHaveLength(result.checkpoints);
      expect(events.at(-1)).toMatchObject({ checkpointsDone: result.checkpoints, imported: result.checkpoints });
      // The approval thread has checkpoints in the subgraph's namespace too.
      expect(events.some((e) => e.threadId === THREADS.approval && e.checkpointNs.startsWith("review:"))).toBe(true);

      await expectSameThreads(source, target);

      // Every version in the target is the target's own (a string from its getNextVersion, whatever the
      // format), never one of the source's: numbers would compare as NaN against the target's strings.
      const sourceVersions = new Set<unknown>();
      for await (const tuple of source.list({})) for (const v of Object.values(tuple.checkpoint.channel_versions)) sourceVersions.add(v);
      for await (const tuple of target.list({})) {
        const versions = [
          ...Object.values(tuple.checkpoint.channel_versions),
          ...Object.values(tuple.checkpoint.versions_seen).flatMap((seen) => Object.values(seen)),
        ];
        for (const version of versions) {
          expect(typeof version).toBe("string");
          expect(sourceVersions.has(version)).toBe(false);
        }
      }

      const before = await dump(target);
      const again = await importCheckpoints(source, target);
      expect(again).toMatchObject({ threads: 3, imported: 0, skipped: result.checkpoints, writeBatches: 0 });
      expect(await dump(target)).toBe(before);

      await expectResumes(target);
    });
  });

  it("imports into a saver of another kind (ours into LangChain's MemorySaver), with that saver's versions", async () => {
    const source = ours();
    await writeScenarios(source);
    const target = new MemorySaver();
    await importCheckpoints(source, target);
    await expectSameThreads(source, target);
    for await (const tuple of target.list({})) {
      for (const version of Object.values(tuple.checkpoint.channel_versions)) expect(typeof version).toBe("number");
    }
    await expectResumes(target);
  });

  it("imports only the threads asked for", async () => {
    const source = new MemorySaver();
    await writeScenarios(source);
    const target = ours();
    const result = await importCheckpoints(source, target, { threadIds: [THREADS.fork] });
    expect(result.threads).toBe(1);
    const threads = new Set<string>();
    for await (const tuple of target.list({})) threads.add(String(tuple.config.configurable?.thread_id));
    expect([...threads]).toEqual([THREADS.fork]);
  });

  it.each([
    ["letters first (v00000001...)", () => new LetterVersionSaver()],
    ["a length digit first (11, 12, ... 1z, 210: base 36)", () => new LengthPrefixedVersionSaver()],
    ["ResumableSaver's own", ours],
  ])("keeps the order of the source's versions whatever their format: %s", async (_name, makeSource) => {
    const source = makeSource();
    const config = { configurable: { thread_id: "counting" }, recursionLimit: 100 };
    await countingGraph(source).invoke({ n: 0 }, config);
    const target = ours();
    await importCheckpoints(source, target);
    const history = async (saver: BaseCheckpointSaver) => {
      const out: unknown[] = [];
      for await (const s of countingGraph(saver).getStateHistory(config)) out.push([s.values, s.next, (s as StateSnapshot).config.configurable?.checkpoint_id]);
      return out;
    };
    expect(await history(target)).toEqual(await history(source));
    expect((await history(target)).length).toBeGreaterThan(40);
    const done = await countingGraph(target).invoke(new Command({ resume: "yes" }), config);
    expect(done).toEqual({ n: 40, answer: "yes" });
    // A new run on the imported thread counts on from where it stopped, through the target's own versions.
    const again = await countingGraph(target).invoke({ n: 38 }, config);
    expect(again.n).toBe(40);
  });

  it("names the thread and checkpoint the target refused; the next run goes on from there", async () => {
    const source = new MemorySaver();
    await writeScenarios(source);
    const target = ours();
    let puts = 0;
    const put = target.put.bind(target);
    target.put = async (...args: Parameters<typeof put>) => {
      puts += 1;
      if (puts === 5) throw new Error("disk full");
      return put(...args);
    };
    const error = await importCheckpoints(source, target).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CheckpointImportError);
    expect((error as Error).message).toMatch(
      /^Importing thread "[^"]+"( \(namespace "[^"]+"\))?, checkpoint \S+ failed: the target refused the checkpoint \(disk full\)\. Checkpoints imported before it are kept; running the import again skips them/,
    );
    const resumed = await importCheckpoints(source, target);
    expect(resumed.skipped).toBe(4);
    expect(resumed.imported).toBe(resumed.checkpoints - 4);
    await expectSameThreads(source, target);
  });

  it("refuses to import a saver into itself", async () => {
    const saver = ours();
    await expect(importCheckpoints(saver, saver)).rejects.toThrow(/the same saver/);
  });
});
