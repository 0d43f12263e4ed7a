import { join } from "node:path";

import Database from "better-sqlite3";
import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { StoreNotSetUpError } from "@resumable/core";
import { afterAll, describe, expect, it } from "vitest";

import { SqliteSaver, SqliteStore } from "../src/index.js";
import { removeTempDirs, tempDir } from "./helpers.js";

afterAll(removeTempDirs);

const State = Annotation.Root({
  items: Annotation<string[]>({ reducer: (a, b) => [...a, ...b], default: () => [] }),
  approved: Annotation<boolean | undefined>(),
});

let runs = { prepare: 0, approve: 0 };

function build() {
  return new StateGraph(State)
    .addNode("prepare", () => {
      runs.prepare += 1;
      return { items: ["prepared"] };
    })
    .addNode("approve", () => {
      runs.approve += 1;
      const answer = interrupt<string, boolean>("approve?");
      return { approved: answer, items: [answer ? "approved" : "rejected"] };
    })
    .addEdge(START, "prepare")
    .addEdge("prepare", "approve")
    .addEdge("approve", END);
}

describe("SqliteSaver", () => {
  it("interrupts in one saver and resumes from the file in a fresh one, without re-running finished nodes", async () => {
    runs = { prepare: 0, approve: 0 };
    const path = join(tempDir(), "graph.db");
    const config = { configurable: { thread_id: "order-42" } };
    const first = await SqliteSaver.connect(path);
    const paused = await build().compile({ checkpointer: first }).invoke({ items: ["start"] }, config);
    expect((paused as { __interrupt__?: Array<{ value: unknown }> }).__interrupt__?.[0]?.value).toBe("approve?");
    await first.close();

    const second = await SqliteSaver.connect(path);
    const graph = build().compile({ checkpointer: second });
    const done = await graph.invoke(new Command({ resume: true }), config);
    expect(done).toMatchObject({ items: ["start", "prepared", "approved"], approved: true });
    expect(runs).toEqual({ prepare: 1, approve: 2 });
    const history = [];
    for await (const snapshot of graph.getStateHistory(config)) history.push(snapshot);
    expect(history.length).toBeGreaterThanOrEqual(4);
    expect(history[0]?.values).toMatchObject({ approved: true });
    const loops = [];
    for await (const tuple of second.list(config, { filter: { source: "loop" } })) loops.push(tuple.metadata?.source);
    expect(loops.length).toBeGreaterThan(0);
    expect(new Set(loops)).toEqual(new Set(["loop"]));
    await second.close();
  });

  it("works on a Database handed in, and leaves it open on close()", async () => {
    const db = new Database(join(tempDir(), "given.db"));
    const saver = await SqliteSaver.connect(db, { synchronous: "NORMAL" });
    expect(saver.store).toBeInstanceOf(SqliteStore);
    await build().compile({ checkpointer: saver }).invoke({ items: [] }, { configurable: { thread_id: "t" } });
    await saver.close();
    expect(db.open).toBe(true);
    expect((db.prepare("SELECT count(*) AS n FROM resumable_checkpoints").get() as { n: number }).n).toBeGreaterThan(0);
    db.close();
  });

  it("fromPath() without setup() fails with StoreNotSetUpError naming the fix", async () => {
    const saver = SqliteSaver.fromPath(join(tempDir(), "unset.db"));
    const error = await saver.getTuple({ configurable: { thread_id: "t" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreNotSetUpError);
    expect((error as Error).message).toContain("setup()");
    await saver.setup();
    expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeUndefined();
    await saver.close();
  });
});
