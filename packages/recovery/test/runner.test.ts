import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import Database from "better-sqlite3";
import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { MemoryStore, ResumableSaver, type CheckpointStore } from "@resumable/core";
import { SqliteStore } from "@resumable/sqlite";
import { afterAll, describe, expect, it } from "vitest";

import { RecoveryRunner, backoffDelay, type RecoveryEvent } from "../src/index.js";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function tempFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "resumable-recovery-"));
  dirs.push(dir);
  return join(dir, "threads.sqlite");
}

const State = Annotation.Root({
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  poison: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
});

interface Control {
  counts: Record<string, number>;
  /** Called inside node b; may throw, hang, abort. */
  inB: (threadId: string) => Promise<void> | void;
}

/** a → b → c; b may ask a person first when `ask` is set. */
function graph(control: Control, options: { ask?: boolean; breakpoint?: boolean } = {}) {
  const hit = (name: string) => (control.counts[name] = (control.counts[name] ?? 0) + 1);
  const builder = new StateGraph(State)
    .addNode("a", () => {
      hit("a");
      return { log: ["a"] };
    })
    .addNode("b", async (state, config) => {
      hit("b");
      if (state.poison) throw new Error("this order is poison: the policy service rejects it every time");
      if (options.ask) {
        const answer = interrupt<string, string>("approve?");
        return { log: [`b:${answer}`] };
      }
      await control.inB(String(config.configurable?.thread_id));
      return { log: ["b"] };
    })
    .addNode("c", () => {
      hit("c");
      return { log: ["c"] };
    })
    .addEdge(START, "a")
    .addEdge("a", "b")
    .addEdge("b", "c")
    .addEdge("c", END);
  return builder.compile(options.breakpoint ? { interruptBefore: ["c"] } : {});
}

const config = (thread: string) => ({ configurable: { thread_id: thread } });

/** Runs a thread until node b, where the run is aborted as a crash would stop it: the thread is left pending. */
async function crashInB(saver: ResumableSaver, control: Control, thread: string): Promise<void> {
  const controller = new AbortController();
  const before = control.inB;
  control.inB = () => {
    controller.abort(new Error("the process died"));
    return new Promise((resolve) => setTimeout(resolve, 10));
  };
  const g = graph(control);
  await expect(Object.assign(Object.create(g), { checkpointer: saver }).invoke({ log: [] }, { ...config(thread), signal: controller.signal, durability: "sync" })).rejects.toThrow();
  control.inB = before;
}

for (const [name, open] of [
  ["MemoryStore", () => new MemoryStore()],
  ["SqliteStore", () => new SqliteStore(tempFile())],
] as Array<[string, () => CheckpointStore]>) {
  describe(`RecoveryRunner on ${name}`, () => {
    it("resumes a thread a crash left pending, without re-running the nodes that had finished", async () => {
      const store = open();
      const saver = new ResumableSaver(store);
      await saver.setup();
      const control: Control = { counts: {}, inB: () => undefined };
      await crashInB(saver, control, "crashed");
      expect((await saver.getThreadStatus("crashed"))?.state).toBe("pending");
      const events: RecoveryEvent[] = [];
      const runner = new RecoveryRunner({ graph: graph(control), saver, idleMs: 0, onEvent: (e) => events.push(e) });
      const pass = await runner.runOnce();
      expect(pass.outcomes).toEqual({ crashed: "done" });
      expect(control.counts).toEqual({ a: 1, b: 2, c: 1 });
      const status = await saver.getThreadStatus("crashed");
      expect(status).toMatchObject({ state: "done", attempts: 0 });
      expect(events.map((e) => e.type)).toEqual(["claimed", "resumed"]);
      expect(await saver.getLease("crashed")).toMatchObject({ released: true, workerId: runner.workerId });
      expect((await runner.runOnce()).outcomes).toEqual({});
      await store.close();
    });

    it("retries a failing thread with backoff, counting attempts in its status, then dead-letters it with its error", async () => {
      const store = open();
      const saver = new ResumableSaver(store);
      await saver.setup();
      const control: Control = { counts: {}, inB: () => undefined };
      const g = graph(control);
      await expect(Object.assign(Object.create(g), { checkpointer: saver }).invoke({ log: [], poison: true }, config("poison"))).rejects.toThrow(/poison/);
      expect((await saver.getThreadStatus("poison"))?.state).toBe("failed");
      const runner = new RecoveryRunner({ graph: g, saver, idleMs: 0, maxAttempts: 3, backoff: { initialMs: 40, factor: 2 } });
      const outcomes: string[] = [];
      for (let i = 0; i < 40 && !outcomes.includes("dead"); i += 1) {
        const pass = await runner.runOnce();
        outcomes.push(...Object.values(pass.outcomes));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(outcomes).toEqual(["failed", "failed", "failed", "dead"]);
      expect(control.counts.b).toBe(4);
      const dead = await saver.getThreadStatus("poison");
      expect(dead).toMatchObject({ state: "dead", attempts: 3 });
      expect(dead?.error).toMatch(/^dead-lettered after 3 attempts: this order is poison/);
      const listed = await saver.listThreads({ status: "dead" });
      expect(listed.threads.map((t) => [t.threadId, t.error])).toEqual([["poison", dead?.error]]);
      expect((await runner.runOnce()).outcomes).toEqual({});
      await store.close();
    });

    it("leaves interrupted threads and static breakpoints to a person, and skips a thread another worker holds", async () => {
      const store = open();
      const saver = new ResumableSaver(store);
      await saver.setup();
      const control: Control = { counts: {}, inB: () => undefined };
      const asking = graph(control, { ask: true });
      await Object.assign(Object.create(asking), { checkpointer: saver }).invoke({ log: [] }, config("asks"));
      expect((await saver.getThreadStatus("asks"))?.state).toBe("interrupted");
      const stopping = graph(control, { breakpoint: true });
      await Object.assign(Object.create(stopping), { checkpointer: saver }).invoke({ log: [] }, config("breakpoint"));
      expect((await saver.getThreadStatus("breakpoint"))?.state).toBe("pending");
      const runner = new RecoveryRunner({ graph: stopping, saver, idleMs: 0 });
      expect((await runner.runOnce()).outcomes).toEqual({ breakpoint: "skipped" });
      const marked = await saver.getThreadStatus("breakpoint");
      expect(marked?.state).toBe("interrupted");
      expect(marked?.interrupts.map((i) => i.value)).toEqual([{ interruptBefore: ["c"] }]);
      expect(control.counts.c).toBeUndefined();
      // A person answers the interrupt; the thread finishes.
      await Object.assign(Object.create(asking), { checkpointer: saver }).invoke(new Command({ resume: "yes" }), config("asks"));
      expect((await saver.getThreadStatus("asks"))?.state).toBe("done");
      // A pending thread someone else holds is skipped.
      await crashInB(saver, control, "held");
      const other = await saver.claimLease("held", { workerId: "someone-else", ttlMs: 60_000 });
      expect(other).toBeDefined();
      const plain = new RecoveryRunner({ graph: graph(control), saver, idleMs: 0 });
      expect((await plain.runOnce()).outcomes).toEqual({ held: "skipped" });
      await saver.releaseLease(other!);
      expect((await plain.runOnce()).outcomes).toEqual({ held: "done" });
      await store.close();
    });

    it("two runners over one database resume each of 12 crashed threads exactly once", async () => {
      const store = open();
      const saver = new ResumableSaver(store);
      await saver.setup();
      const control: Control = { counts: {}, inB: () => undefined };
      for (let i = 0; i < 12; i += 1) await crashInB(saver, control, `crash-${i}`);
      control.counts = {};
      control.inB = () => new Promise((resolve) => setTimeout(resolve, 5));
      const other = new ResumableSaver(store);
      const runners = [new RecoveryRunner({ graph: graph(control), saver, idleMs: 0, concurrency: 3 }), new RecoveryRunner({ graph: graph(control), saver: other, idleMs: 0, concurrency: 3 })];
      for (let round = 0; round < 20; round += 1) {
        await Promise.all(runners.map((r) => r.runOnce()));
        const pending = await saver.listThreads({ status: ["pending", "failed"] });
        if (pending.threads.length === 0) break;
      }
      const done = await saver.listThreads({ status: "done" });
      expect(done.threads).toHaveLength(12);
      expect(control.counts).toEqual({ b: 12, c: 12 });
      await store.close();
    });
  });
}

describe("a lease lost while the thread runs", () => {
  it("stops the resume when another worker takes the thread over: its renewal fails, its writes are refused", async () => {
    const path = tempFile();
    const store = new SqliteStore(path);
    const saver = new ResumableSaver(store);
    await saver.setup();
    const control: Control = { counts: {}, inB: () => undefined };
    await crashInB(saver, control, "stolen");
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    control.inB = () => {
      entered();
      return gate;
    };
    const events: RecoveryEvent[] = [];
    const runner = new RecoveryRunner({ graph: graph(control), saver, idleMs: 0, leaseTtlMs: 300, renewEveryMs: 50, onEvent: (e) => events.push(e) });
    const pass = runner.runOnce();
    await inside;
    // Another worker takes the thread over (as after this worker's lease expired): the token moves on.
    const db = new Database(path);
    db.prepare("UPDATE resumable_leases SET token = token + 1, worker_id = 'intruder' WHERE thread_id = 'stolen'").run();
    db.close();
    await new Promise((resolve) => setTimeout(resolve, 150));
    release();
    expect((await pass).outcomes).toEqual({ stolen: "lease-lost" });
    expect(events.find((e) => e.type === "resumed")).toMatchObject({ outcome: "lease-lost" });
    // Nothing of b's step reached the database: the thread still waits at b.
    const state = await Object.assign(Object.create(graph(control)), { checkpointer: saver }).getState(config("stolen"));
    expect(state.next).toEqual(["b"]);
    expect(control.counts.c).toBeUndefined();
    await store.close();
  });

  it("computes exponential backoff with a ceiling", () => {
    expect([0, 1, 2, 3, 10].map((n) => backoffDelay(n, { initialMs: 100, factor: 3, maxMs: 2000 }))).toEqual([0, 100, 300, 900, 2000]);
  });

  it("refuses a saver without leases or status, with an actionable message", async () => {
    const store = new MemoryStore();
    const saver = new ResumableSaver(store, { threadStatus: false });
    expect(() => new RecoveryRunner({ graph: graph({ counts: {}, inB: () => undefined }), saver })).toThrow(/threadStatus: false/);
  });
});
