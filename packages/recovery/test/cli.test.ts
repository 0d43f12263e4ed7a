import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { Annotation, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { ResumableSaver, type CheckpointStore } from "@resumable/core";
import { PostgresStore } from "@resumable/postgres";
import { SqliteStore } from "@resumable/sqlite";
import { createTestDatabase, type TestDatabase } from "@resumable/test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { formatAge, main, parseDuration } from "../src/cli.js";

const dir = mkdtempSync(join(tmpdir(), "resumable-recovery-cli-"));
let pg: TestDatabase;
beforeAll(async () => {
  pg = await createTestDatabase();
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await pg?.drop();
});

const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }), kind: Annotation<string>() });
const graph = (saver: ResumableSaver) =>
  new StateGraph(State)
    .addNode("work", (s) => {
      if (s.kind === "fail") throw new Error(`card declined for ${s.kind}`);
      if (s.kind === "ask") return { log: [String(interrupt({ question: "Refund 42 EUR?" }))] };
      return { log: ["worked"] };
    })
    .addEdge(START, "work")
    .addEdge("work", END)
    .compile({ checkpointer: saver });

/** Threads in every state: done, failed, interrupted, dead, and one left pending. */
async function populate(store: CheckpointStore): Promise<void> {
  const saver = new ResumableSaver(store);
  await saver.setup();
  const g = graph(saver);
  await g.invoke({ kind: "ok" }, { configurable: { thread_id: "order-done" } });
  await g.invoke({ kind: "fail" }, { configurable: { thread_id: "order-failed" } }).catch(() => undefined);
  await g.invoke({ kind: "ask" }, { configurable: { thread_id: "order-asks" } });
  await g.invoke({ kind: "fail" }, { configurable: { thread_id: "order-dead" } }).catch(() => undefined);
  const dead = await saver.getThreadStatus("order-dead");
  await saver.updateThreadStatus("order-dead", { checkpointId: dead!.checkpointId, addAttempts: 5 });
  await saver.updateThreadStatus("order-dead", { checkpointId: dead!.checkpointId, state: "dead", error: "dead-lettered after 5 attempts: card declined" });
  await g.updateState({ configurable: { thread_id: "order-pending" } }, { kind: "ok" }, "__start__");
  await store.close();
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, output: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) } };
}

describe("resumable-recovery", () => {
  it("lists unfinished, interrupted and dead-lettered threads of a SQLite file, with errors and interrupt values", async () => {
    const path = join(dir, "threads.sqlite");
    await populate(new SqliteStore(path));
    const { out, err, output } = capture();
    expect(await main(["list", "--db", path], output), err.join("\n")).toBe(0);
    const text = out.join("\n");
    expect(text).toMatch(/Unfinished \(pending, failed\): 2\n {2}THREAD +STATE +IDLE +ATTEMPTS +DETAIL\n {2}order-failed +failed +\d+s +0 +card declined for fail\n {2}order-pending +pending/);
    expect(text).toMatch(/Interrupted, waiting for a person: 1\n.*\n {2}order-asks +interrupted +\d+s +0 +\{"question":"Refund 42 EUR\?"\}/);
    expect(text).toMatch(/Dead-lettered: 1\n.*\n {2}order-dead +dead +\d+s +5 +dead-lettered after 5 attempts: card declined/);
    expect(text).not.toMatch(/order-done/);

    const json = capture();
    expect(await main(["list", "--db", path, "--status", "done,failed", "--json"], json.output)).toBe(0);
    expect(json.out.map((l) => JSON.parse(l).threadId)).toEqual(["order-failed", "order-done"]);
    const old = capture();
    expect(await main(["list", "--db", path, "--older-than", "1h"], old.output)).toBe(0);
    expect(old.out.join("\n")).toMatch(/Unfinished \(pending, failed\): 0/);
  });

  it("shows one thread and requeues a dead-lettered one", async () => {
    const path = join(dir, "threads.sqlite");
    const shown = capture();
    expect(await main(["show", "order-dead", "--db", path], shown.output)).toBe(0);
    expect(shown.out.join("\n")).toMatch(/state: +dead\n.*\n.*\n {2}attempts: +5\n {2}error: +dead-lettered after 5 attempts: card declined\n {2}lease: +never claimed/);
    const requeued = capture();
    expect(await main(["requeue", "order-dead", "--db", path], requeued.output), requeued.err.join("\n")).toBe(0);
    expect(requeued.out.join("\n")).toMatch(/pending again \(attempts reset from 5 to 0\)/);
    const after = capture();
    expect(await main(["show", "order-dead", "--db", path, "--json"], after.output)).toBe(0);
    const parsed = JSON.parse(after.out[0]!);
    expect(parsed.status).toMatchObject({ state: "pending", attempts: 0 });
    expect(parsed.lease).toMatchObject({ released: true });
    const again = capture();
    expect(await main(["requeue", "order-done", "--db", path], again.output)).toBe(1);
    expect(again.err.join("\n")).toMatch(/is done; only dead-lettered or failed threads are requeued/);
  });

  it("reads PostgreSQL through a URL and a store module the same way", async () => {
    await populate(await PostgresStore.connect(pg.url, { schema: "cli_threads" }).then(async (s) => (await s.setup(), s)));
    const viaUrl = capture();
    expect(await main(["list", "--db", pg.url, "--schema", "cli_threads"], viaUrl.output), viaUrl.err.join("\n")).toBe(0);
    expect(viaUrl.out.join("\n")).toMatch(/order-failed[\s\S]*order-asks[\s\S]*order-dead/);
    process.env["RESUMABLE_CLI_TEST_PG"] = pg.url;
    const viaModule = capture();
    expect(await main(["list", "--store", join(import.meta.dirname, "fixtures", "pg-store.ts")], viaModule.output), viaModule.err.join("\n")).toBe(0);
    expect(viaModule.out.join("\n")).toMatch(/order-dead/);
  });

  it("says what is wrong: usage, a missing file, unknown states", async () => {
    const none = capture();
    expect(await main([], none.output)).toBe(2);
    expect(none.err.join("\n")).toMatch(/Usage: resumable-recovery/);
    const missing = capture();
    expect(await main(["list", "--db", join(dir, "nope.sqlite")], missing.output)).toBe(1);
    expect(missing.err.join("\n")).toMatch(/nope\.sqlite does not exist/);
    const states = capture();
    expect(await main(["list", "--db", "x.sqlite", "--status", "sleeping"], states.output)).toBe(2);
    expect(states.err.join("\n")).toMatch(/unknown status "sleeping"/);
    const both = capture();
    expect(await main(["list"], both.output)).toBe(1);
    expect(both.err.join("\n")).toMatch(/--db/);
  });

  it("parses durations and prints ages", () => {
    expect(["1500ms", "30s", "5m", "2h", "1d", "250"].map(parseDuration)).toEqual([1500, 30_000, 300_000, 7_200_000, 86_400_000, 250]);
    expect(() => parseDuration("soon")).toThrow(/not a duration/);
    expect([5_000, 192_000, 18_180_000, 187_200_000].map(formatAge)).toEqual(["5s", "3m12s", "5h03m", "2d4h"]);
  });
});
