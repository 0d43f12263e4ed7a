// importCheckpoints from any saver into any saver: LangChain's in-memory saver (integer versions that
// forks share), a saver with LangChain Python's string versions ("000…05.0.123"), and ours, into ours
// and into LangChain's. Every imported thread must read back as the source reads it, resume, and a
// second import must change nothing.
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

      // Every version in the target is the target's own: ours are padded strings, never the source's numbers.
      for await (const tuple of target.list({})) {
        const versions = [
          ...Object.values(tuple.checkpoint.channel_versions),
          ...Object.values(tuple.checkpoint.versions_seen).flatMap((seen) => Object.values(seen)),
        ];
        for (const version of versions) expect(version).toMatch(/^\d{32}\.[0-9a-f]{16}$/);
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

  it("refuses a version without an order position, naming thread, checkpoint and channel, and keeps what it imported", async () => {
    class OpaqueVersionSaver extends MemorySaver {
      override getNextVersion(): number {
        return `v-${Math.random().toString(36).slice(2)}` as unknown as number;
      }
    }
    const source = new OpaqueVersionSaver();
    await writeScenarios(source).catch(() => undefined);
    const error = await importCheckpoints(source, ours()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CheckpointImportError);
    expect((error as Error).message).toMatch(/^Importing thread "[^"]+".*, checkpoint \S+ failed: channel "[^"]+" has version "v-[a-z0-9]+", which has no order position/);
    expect((error as Error).message).toMatch(/running the import again skips them/);
  });

  it("refuses to import a saver into itself", async () => {
    const saver = ours();
    await expect(importCheckpoints(saver, saver)).rejects.toThrow(/the same saver/);
  });
});
