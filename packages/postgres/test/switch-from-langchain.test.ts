// Switching from LangChain's PostgresSaver (@langchain/langgraph-checkpoint-postgres):
// `fromConnString` as LangChain has it, and its threads imported (the function and
// `resumable-postgres import-langchain`) from tables its saver wrote with real graphs: interrupts in
// a subgraph, a failed parallel step's pending writes, a fork from an old checkpoint. Every imported
// thread reads back through both savers the same, resumes, and a second import changes no row.
import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver as LangChainPostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { importCheckpoints } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The scenarios live with core's import tests; they are test code, shared by path.
import { THREADS, expectResumes, expectSameThreads, writeScenarios } from "../../core/test/fixtures/import-scenarios.js";
import { main } from "../src/cli.js";
import { PostgresSaver, TABLES } from "../src/index.js";
import { TestDb } from "./helpers.js";

const db = new TestDb();
let pool: ReturnType<TestDb["pool"]>;
let source: LangChainPostgresSaver;

beforeAll(async () => {
  await db.init();
  pool = db.pool();
  // One LangChain database for the file, written once: the scenarios in schema "langchain".
  source = new LangChainPostgresSaver(pool, undefined, { schema: "langchain" });
  await source.setup();
  await writeScenarios(source);
});
afterAll(() => db.closeAll());

/** Every row of our tables in a schema, sorted: what "changes nothing" is checked against. */
async function rows(schema: string): Promise<string> {
  const out: Array<[string, string[]]> = [];
  for (const table of [TABLES.checkpoints, TABLES.blobs, TABLES.writes, TABLES.chunks]) {
    const result = await pool.query(`SELECT * FROM "${schema}"."${table}"`);
    out.push([table, result.rows.map((row) => JSON.stringify(row, (_k, v: unknown) => (Buffer.isBuffer(v) ? v.toString("base64") : v))).sort()]);
  }
  return JSON.stringify(out);
}

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { output: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe("PostgresSaver.fromConnString", () => {
  it("has LangChain's signature, returns at once, and works after setup() as LangChain's does", async () => {
    const asLangChain: (connString: string, options?: { schema?: string }) => BaseCheckpointSaver = LangChainPostgresSaver.fromConnString;
    const asOurs: (connString: string, options?: { schema?: string }) => BaseCheckpointSaver = PostgresSaver.fromConnString;
    expect(typeof asLangChain).toBe(typeof asOurs);

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

    const first = PostgresSaver.fromConnString(db.url, { schema: "switched" });
    expect(first).toBeInstanceOf(PostgresSaver);
    await first.setup();
    await graph(first).invoke({ steps: [] }, config);
    // LangChain's name for closing; it ends the pool fromConnString opened.
    await first.end();

    const second = PostgresSaver.fromConnString(db.url, { schema: "switched" });
    await second.setup();
    const done = await graph(second).invoke(new Command({ resume: "yes" }), config);
    expect(done.steps).toEqual(["yes", "done"]);
    await second.close();
  });

  it("before setup(), says to call it", async () => {
    const saver = PostgresSaver.fromConnString(db.url, { schema: "never_set_up" });
    await expect(saver.getTuple({ configurable: { thread_id: "t" } })).rejects.toThrow(/setup\(\)/);
    await saver.close();
  });

  it("shares a schema with LangChain's saver without seeing its threads (they need the import)", async () => {
    const ours = await PostgresSaver.connect(db.url, { schema: "langchain" });
    expect(await ours.getTuple({ configurable: { thread_id: THREADS.approval } })).toBeUndefined();
    await ours.close();
  });
});

describe("importing LangChain's PostgreSQL threads", () => {
  it("importCheckpoints: every thread reads back the same through both savers, resumes, and a second import changes no row", async () => {
    const target = await PostgresSaver.connect(db.url, { schema: "imported" });
    const result = await importCheckpoints(source, target);
    expect(result).toMatchObject({ threads: 3, skipped: 0 });
    expect(result.imported).toBe(result.checkpoints);
    await target.close();

    const reopened = await PostgresSaver.connect(db.url, { schema: "imported" });
    await expectSameThreads(source, reopened);
    const before = await rows("imported");
    const again = await importCheckpoints(source, reopened);
    expect(again).toMatchObject({ imported: 0, skipped: result.checkpoints, writeBatches: 0 });
    expect(await rows("imported")).toBe(before);
    await expectResumes(reopened, source);
    await reopened.close();
  });

  it("resumable-postgres import-langchain: prints progress and a summary; the target defaults to the same database", async () => {
    const first = capture();
    expect(await main(["import-langchain", db.url, "--source-schema", "langchain", "--schema", "cli"], first.output)).toBe(0);
    expect(first.err).toEqual([]);
    expect(first.out[0]).toMatch(/^Importing LangChain's checkpoints from postgres:\/\/\S+ \(schema "langchain"\) into postgres:\/\/\S+ \(schema "cli"\)$/);
    expect(first.out.some((l) => /^ {2}thread 3\/3 "[^"]+": \d+ checkpoints; \d+ imported, 0 already there so far$/.test(l))).toBe(true);
    expect(first.out.at(-1)).toMatch(/^imported 3 threads: [1-9]\d* new checkpoints, 0 already there, \d+ write batches, in \d+\.\d s$/);

    const again = capture();
    expect(await main(["import-langchain", db.url, db.url, "--source-schema", "langchain", "--schema", "cli"], again.output)).toBe(0);
    expect(again.out.at(-1)).toMatch(/^imported 3 threads: 0 new checkpoints, [1-9]\d* already there, 0 write batches/);

    const target = await PostgresSaver.connect(db.url, { schema: "cli" });
    await expectSameThreads(source, target);
    await expectResumes(target, source);
    await target.close();
  });

  it("says what is wrong: a schema without LangChain's tables, no URL", async () => {
    const wrong = capture();
    expect(await main(["import-langchain", db.url, "--source-schema", "nothing_here", "--schema", "unused"], wrong.output)).toBe(1);
    expect(wrong.err.join("\n")).toMatch(/schema "nothing_here" of postgres:\/\/\S+ has no LangChain checkpoint tables .*pass --source-schema/);

    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      const none = capture();
      expect(await main(["import-langchain"], none.output)).toBe(2);
      expect(none.err.join("\n")).toMatch(/no database URL; pass one, or set DATABASE_URL/);
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved;
    }
  });
});
