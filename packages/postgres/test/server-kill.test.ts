import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import { createTestDatabase, startDisposablePostgres, type DisposablePostgresServer } from "@resumable/test-servers";
import pg from "pg";

import { PostgresSaver, PostgresUnavailableError } from "../src/index.js";

// This file owns its server: killing the shared one would break the other test files.
let server: DisposablePostgresServer;
let url: string;
beforeAll(async () => {
  server = await startDisposablePostgres();
  url = (await createTestDatabase(server)).url;
});
afterAll(() => server?.stop());

const NODES = ["lookup", "check", "charge", "email", "archive"];

function buildGraph(checkpointer: PostgresSaver, onNode: (name: string) => Promise<void>) {
  const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  let builder = new StateGraph(State) as unknown as StateGraph<typeof State.spec, any, any, string>;
  for (const name of NODES) {
    builder = builder.addNode(name, async () => {
      await onNode(name);
      return { log: [name] };
    }) as typeof builder;
  }
  builder.addEdge(START, NODES[0]!);
  NODES.slice(1).forEach((name, i) => builder.addEdge(NODES[i]!, name));
  builder.addEdge(NODES.at(-1)!, END);
  return builder.compile({ checkpointer });
}

describe("the PostgreSQL server is killed in the middle of a run", () => {
  it("reports a clear error, recovers after restart without a torn checkpoint, and the run resumes", async () => {
    const saver = await PostgresSaver.connect(url, { pool: { max: 3, connectionTimeoutMillis: 5000 } });
    const config = { configurable: { thread_id: "killed-run" }, durability: "sync" as const };
    const ran: string[] = [];
    let killed = false;
    const graph = buildGraph(saver, async (name) => {
      ran.push(name);
      if (name === "charge" && !killed) {
        killed = true;
        await server.kill();
      }
    });

    const error = await graph.invoke({ log: ["start"] }, config).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(PostgresUnavailableError);
    expect((error as Error).message).toMatch(/PostgreSQL was unreachable during (putWrites|putCheckpoint)/);
    // While the server is down every call fails the same clear way.
    await expect(saver.getTuple(config)).rejects.toBeInstanceOf(PostgresUnavailableError);

    await server.restart();
    // The same saver and pool work again: no dead connection is handed out.
    const before = await saver.getTuple(config);
    expect(before).toBeDefined();

    // No checkpoint lacks a blob its put stored (a channel without a value has none), checked on the
    // rows themselves: every blob the saver says a checkpoint requires is in the table.
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      const present = new Set(
        (await check.query<{ channel: string; version: string }>(`SELECT channel, version FROM resumable_blobs WHERE thread_id = 'killed-run'`)).rows.map(
          (r) => `${r.channel}\u0000${r.version}`,
        ),
      );
      const ids = (await check.query<{ checkpoint_id: string }>(`SELECT checkpoint_id FROM resumable_checkpoints WHERE thread_id = 'killed-run'`)).rows;
      expect(ids.length).toBeGreaterThan(2);
      const missing: string[] = [];
      for (const { checkpoint_id } of ids) {
        const stored = (await saver.store.getCheckpoint({ threadId: "killed-run", checkpointNs: "", checkpointId: checkpoint_id }))!;
        for (const { channel, version } of await saver.requiredBlobs(stored)) {
          if (!present.has(`${channel}\u0000${version}`)) missing.push(`${checkpoint_id} ${channel}@${version}`);
        }
      }
      expect(missing).toEqual([]);
    } finally {
      await check.end();
    }
    for await (const tuple of saver.list(config)) expect(tuple.checkpoint.id).toBeTypeOf("string");

    const resumed = await graph.invoke(null, config);
    expect(resumed.log).toEqual(["start", ...NODES]);
    // Nodes that finished before the crash were not run again; only the interrupted one may repeat.
    expect(ran.filter((n) => n === "lookup" || n === "check")).toEqual(["lookup", "check"]);
    await saver.close();
  });
});
