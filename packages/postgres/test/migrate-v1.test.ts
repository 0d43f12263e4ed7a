/**
 * A schema written by the first release (migration version 1) is migrated by setup() and reads back
 * as it did; its threads continue, with delta storage from there on.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { Command } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PostgresSaver, SCHEMA_VERSION } from "../src/index.js";
import { approval, chat, chatHistory, question } from "../../sqlite/test/fixtures/v1/graphs.js";
import { TestDb } from "./helpers.js";

const fixtures = join(import.meta.dirname, "fixtures/v1");
const expected = JSON.parse(readFileSync(join(fixtures, "v1-expected.json"), "utf8")) as Record<string, unknown>;
const db = new TestDb();

beforeAll(async () => {
  await db.init();
  // pg_dump's output of the first release's schema, rows included (plain SQL, no psql commands).
  const pool = db.pool();
  await pool.query(readFileSync(join(fixtures, "v1-postgres.sql"), "utf8"));
  await pool.query("SELECT pg_catalog.set_config('search_path', 'public', false)");
});
afterAll(() => db.closeAll());

describe("a schema written by the first release", () => {
  it("is migrated by setup() and reads back as it did, then its threads continue", async () => {
    const pool = db.pool();
    const [{ v } = { v: 0 }] = (await pool.query<{ v: number }>("SELECT max(version) AS v FROM v1fixture.resumable_migrations")).rows;
    expect(v).toBe(1);
    const saver = await PostgresSaver.connect(db.url, { schema: "v1fixture" });
    const [{ v: after } = { v: 0 }] = (await pool.query<{ v: number }>("SELECT max(version) AS v FROM v1fixture.resumable_migrations")).rows;
    expect(after).toBe(SCHEMA_VERSION);
    for (const kind of ["plain", "delta"] as const) {
      expect(await chatHistory(chat(kind, saver), `v1-${kind}`)).toEqual(expected[`v1-${kind}`]);
    }
    const state = await approval(saver).getState({ configurable: { thread_id: "v1-interrupt" } });
    expect({ values: state.values, next: state.next, interrupts: state.tasks.flatMap((t) => t.interrupts.map((i) => i.value)) }).toEqual(
      expected["v1-interrupt"],
    );
    for (const kind of ["plain", "delta"] as const) {
      const graph = chat(kind, saver);
      await graph.invoke({ messages: [question(4)] }, { configurable: { thread_id: `v1-${kind}` } });
      const old = (expected[`v1-${kind}`] as Array<{ messages: unknown[] }>)[0]!.messages;
      const now = (await chatHistory(graph, `v1-${kind}`))[0] as { messages: Array<{ id: string }> };
      expect(now.messages.slice(0, old.length)).toEqual(old);
      expect(now.messages.slice(old.length).map((m) => m.id)).toEqual(["user-4", "ai-9"]);
    }
    const done = await approval(saver).invoke(new Command({ resume: "yes" }), { configurable: { thread_id: "v1-interrupt" } });
    expect(done.log).toEqual(["start", "prepared", "approved:yes"]);
    await saver.close();
  });
});
