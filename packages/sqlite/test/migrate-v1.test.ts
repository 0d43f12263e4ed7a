/**
 * A database written by the first release (schema version 1: whole values, long versions, no delta
 * roots or piece references) is migrated by setup() and reads back as it did; threads written then
 * continue, with delta storage from there on.
 */
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";

import Database from "better-sqlite3";
import { Command } from "@langchain/langgraph";
import { afterAll, describe, expect, it } from "vitest";

import { SCHEMA_VERSION, SqliteSaver } from "../src/index.js";
import { approval, chat, chatHistory, question } from "./fixtures/v1/graphs.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

const fixtures = join(import.meta.dirname, "fixtures/v1");
const expected = JSON.parse(readFileSync(join(fixtures, "v1-expected.json"), "utf8")) as Record<string, unknown>;

async function openFixture() {
  const path = join(tempDir(), "v1.sqlite");
  copyFileSync(join(fixtures, "v1.sqlite"), path);
  const before = new Database(path, { readonly: true });
  const version = (before.prepare("SELECT max(version) AS v FROM resumable_migrations").get() as { v: number }).v;
  before.close();
  return { path, version, saver: await SqliteSaver.connect(path) };
}

describe("a database written by the first release", () => {
  it("is migrated by setup() and reads back as it did, every checkpoint of every thread", async () => {
    const { path, version, saver } = await openFixture();
    expect(version).toBe(1);
    for (const kind of ["plain", "delta"] as const) {
      expect(await chatHistory(chat(kind, saver), `v1-${kind}`)).toEqual(expected[`v1-${kind}`]);
    }
    const state = await approval(saver).getState({ configurable: { thread_id: "v1-interrupt" } });
    expect({ values: state.values, next: state.next, interrupts: state.tasks.flatMap((t) => t.interrupts.map((i) => i.value)) }).toEqual(
      expected["v1-interrupt"],
    );
    await saver.close();
    const db = new Database(path, { readonly: true });
    expect((db.prepare("SELECT max(version) AS v FROM resumable_migrations").get() as { v: number }).v).toBe(SCHEMA_VERSION);
    db.close();
  });

  it("continues its threads: a chat gains turns (stored as deltas from there on), an interrupt resumes", async () => {
    const { saver } = await openFixture();
    for (const kind of ["plain", "delta"] as const) {
      const graph = chat(kind, saver);
      const config = { configurable: { thread_id: `v1-${kind}` } };
      await graph.invoke({ messages: [question(4)] }, config);
      await graph.invoke({ messages: [question(5)] }, config);
      const old = (expected[`v1-${kind}`] as Array<{ messages: unknown[] }>)[0]!.messages;
      const now = (await chatHistory(graph, `v1-${kind}`))[0] as { messages: Array<{ id: string }> };
      expect(now.messages.slice(0, old.length)).toEqual(old);
      expect(now.messages.slice(old.length).map((m) => m.id)).toEqual(["user-4", "ai-9", "user-5", "ai-11"]);
      // And a fresh saver reads the mixed thread (first-release rows, then new ones) the same.
      const again = await SqliteSaver.connect((await saver.store.database()).name);
      expect(await chatHistory(chat(kind, again), `v1-${kind}`)).toEqual(await chatHistory(graph, `v1-${kind}`));
      await again.close();
    }
    const done = await approval(saver).invoke(new Command({ resume: "yes" }), { configurable: { thread_id: "v1-interrupt" } });
    expect(done.log).toEqual(["start", "prepared", "approved:yes"]);
    const stored = await saver.store.getCheckpoint({ threadId: "v1-plain", checkpointNs: "" });
    expect(stored?.blobs.find((b) => b.channel === "messages" && b.version === stored.record.channelVersions.messages)?.baseVersion).toBeDefined();
    await saver.close();
  });
});
