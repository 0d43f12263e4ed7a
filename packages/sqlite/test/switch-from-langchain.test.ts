// Switching from LangChain's SqliteSaver (@langchain/langgraph-checkpoint-sqlite): `fromConnString`
// as LangChain has it, and its threads imported (the function and `resumable-sqlite import-langchain`)
// from databases its saver wrote with real graphs: interrupts in a subgraph, a failed parallel step's
// pending writes, a fork from an old checkpoint. Every imported thread reads back through both savers
// the same, resumes, and a second import changes no row.
import { join } from "node:path";

import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SqliteSaver as LangChainSqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { importCheckpoints } from "@resumable/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";

// The scenarios live with core's import tests; they are test code, shared by path.
import { THREADS, expectResumes, expectSameThreads, writeScenarios } from "../../core/test/fixtures/import-scenarios.js";
import { main } from "../src/cli.js";
import { SqliteSaver } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

/** Every row of our tables, in order: what "changes nothing" is checked against. */
function rows(file: string): string {
  const db = new Database(file, { readonly: true });
  try {
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'resumable\\_%' ESCAPE '\\' AND name != 'resumable_migrations' ORDER BY name`).all() as Array<{ name: string }>;
    expect(tables.length).toBeGreaterThan(2);
    const sorted = (name: string) => (db.prepare(`SELECT * FROM "${name}"`).all() as unknown[]).map((row) => JSON.stringify(row, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("base64") : v))).sort();
    return JSON.stringify(tables.map(({ name }) => [name, sorted(name)]));
  } finally {
    db.close();
  }
}

/** A database LangChain's saver wrote, with the scenario threads. */
async function langchainDatabase(): Promise<{ file: string; saver: LangChainSqliteSaver }> {
  const file = join(tempDir(), "langchain.sqlite");
  const saver = LangChainSqliteSaver.fromConnString(file);
  await writeScenarios(saver);
  return { file, saver };
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe("SqliteSaver.fromConnString", () => {
  it("has LangChain's signature, returns at once, and sets itself up on first use", async () => {
    const asLangChain: (connStringOrLocalPath: string) => BaseCheckpointSaver = LangChainSqliteSaver.fromConnString;
    const asOurs: (connStringOrLocalPath: string) => BaseCheckpointSaver = SqliteSaver.fromConnString;
    expect(typeof asLangChain).toBe(typeof asOurs);

    const file = join(tempDir(), "switched.sqlite");
    const State = Annotation.Root({ steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = (checkpointer: BaseCheckpointSaver) =>
      new StateGraph(State)
        .addNode("ask", () => ({ steps: [String(interrupt("ok?"))] }))
        .addNode("done", () => ({ steps: ["done"] }))
        .addEdge(START, "ask")
        .addEdge("ask", "done")
        .addEdge("done", END)
        .compile({ checkpointer });
    const config = { configurable: { thread_id: "switched" } };

    const first = SqliteSaver.fromConnString(file);
    expect(first).toBeInstanceOf(SqliteSaver);
    // No setup() call, as with LangChain's saver: the first use creates the tables.
    await graph(first).invoke({ steps: [] }, config);
    await first.close();

    const second = SqliteSaver.fromConnString(file);
    const done = await graph(second).invoke(new Command({ resume: "yes" }), config);
    expect(done.steps).toEqual(["yes", "done"]);
    await second.close();
  });

  it("shares a file with LangChain's saver without seeing its threads (they need the import)", async () => {
    const { file } = await langchainDatabase();
    const ours = SqliteSaver.fromConnString(file);
    expect(await ours.getTuple({ configurable: { thread_id: THREADS.approval } })).toBeUndefined();
    await ours.close();
  });
});

describe("importing LangChain's SQLite threads", () => {
  it("importCheckpoints: every thread reads back the same through both savers, resumes, and a second import changes no row", async () => {
    const { saver: source } = await langchainDatabase();
    const file = join(tempDir(), "ours.sqlite");
    const target = await SqliteSaver.connect(file);
    const result = await importCheckpoints(source, target);
    expect(result).toMatchObject({ threads: 3, skipped: 0 });
    expect(result.imported).toBe(result.checkpoints);
    await target.close();

    // Read back by a saver that did not write them.
    const reopened = await SqliteSaver.connect(file);
    await expectSameThreads(source, reopened);
    const before = rows(file);
    const again = await importCheckpoints(source, reopened);
    expect(again).toMatchObject({ imported: 0, skipped: result.checkpoints, writeBatches: 0 });
    expect(rows(file)).toBe(before);
    await expectResumes(reopened);
    await reopened.close();
  });

  it("resumable-sqlite import-langchain: prints progress and a summary, into another file or the same one", async () => {
    const { file: from, saver: source } = await langchainDatabase();
    const to = join(tempDir(), "ours.sqlite");
    const first = capture();
    expect(await main(["import-langchain", from, to], first.output)).toBe(0);
    expect(first.err).toEqual([]);
    expect(first.out[0]).toBe(`Importing LangChain's checkpoints from ${from} into ${to}`);
    expect(first.out.some((l) => /^ {2}thread 3\/3 "[^"]+": \d+ checkpoints; \d+ imported, 0 already there so far$/.test(l))).toBe(true);
    expect(first.out.at(-1)).toMatch(/^imported 3 threads: (\d+) new checkpoints, 0 already there, \d+ write batches, in \d+\.\d s$/);

    const again = capture();
    expect(await main(["import-langchain", from, to], again.output)).toBe(0);
    expect(again.out.at(-1)).toMatch(/^imported 3 threads: 0 new checkpoints, \d+ already there, 0 write batches/);

    const target = await SqliteSaver.connect(to);
    await expectSameThreads(source, target);
    await target.close();

    // One thread only, then the rest; in place: our tables next to LangChain's, in the file it wrote.
    const one = capture();
    expect(await main(["import-langchain", from, from, "--thread", THREADS.approval], one.output)).toBe(0);
    expect(one.out.at(-1)).toMatch(/^imported 1 thread: [1-9]\d* new checkpoints/);
    const rest = capture();
    expect(await main(["import-langchain", from, from], rest.output)).toBe(0);
    expect(rest.out.at(-1)).toMatch(/^imported 3 threads: [1-9]\d* new checkpoints, [1-9]\d* already there/);
    const sameFile = await SqliteSaver.connect(from);
    await expectSameThreads(source, sameFile);
    await expectResumes(sameFile);
    await sameFile.close();
  });

  it("says what is wrong with the source: missing, not LangChain's, no command", async () => {
    const missing = capture();
    expect(await main(["import-langchain", join(tempDir(), "nope.sqlite"), join(tempDir(), "x.sqlite")], missing.output)).toBe(1);
    expect(missing.err.join("\n")).toMatch(/nope\.sqlite does not exist; give the file LangChain's SqliteSaver wrote/);

    const other = join(tempDir(), "other.sqlite");
    const db = new Database(other);
    db.exec("CREATE TABLE notes (id INTEGER)");
    db.close();
    const notLangchain = capture();
    expect(await main(["import-langchain", other, join(tempDir(), "y.sqlite")], notLangchain.output)).toBe(1);
    expect(notLangchain.err.join("\n")).toMatch(/other\.sqlite has no LangChain checkpoint tables \(checkpoints, writes\); it was not written by @langchain\/langgraph-checkpoint-sqlite/);

    const usage = capture();
    expect(await main([], usage.output)).toBe(2);
    expect(usage.err.join("\n")).toMatch(/Usage: resumable-sqlite <command>/);
    expect(await main(["import-langchain", "only-one"], capture().output)).toBe(2);
  });
});
