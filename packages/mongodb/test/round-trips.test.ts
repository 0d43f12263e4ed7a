// Commands and round trips per saver call, counted from the driver's command monitoring: every
// command sent counts, and commands in flight together are one round trip of latency. The figures
// are printed so the table in the README can be checked.
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import type { CommandStartedEvent, CommandSucceededEvent, CommandFailedEvent } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { MongoDBSaver } from "../src/index.js";
import { HANDLERS, TestServer, threadId } from "./helpers.js";

/** The driver's own commands (handshakes, heartbeats, session ends) are not the store's. */
const OWN = new Set(["hello", "isMaster", "ismaster", "endSessions", "ping", "buildInfo", "saslStart", "saslContinue"]);

function monitor(server: TestServer) {
  let commands = 0;
  let waves = 0;
  const names: string[] = [];
  const inflight = new Set<number>();
  const started = (event: CommandStartedEvent) => {
    if (OWN.has(event.commandName)) return;
    commands += 1;
    names.push(`${event.commandName} ${String(event.command[event.commandName])}`);
    if (inflight.size === 0) waves += 1;
    inflight.add(event.requestId);
  };
  const ended = (event: CommandSucceededEvent | CommandFailedEvent) => void inflight.delete(event.requestId);
  server.client.on("commandStarted", started);
  server.client.on("commandSucceeded", ended);
  server.client.on("commandFailed", ended);
  return {
    reset: () => {
      commands = 0;
      waves = 0;
      names.splice(0);
    },
    names: () => [...names],
    get: () => ({ commands, roundTrips: waves }),
  };
}

function checkpoint(id: string, versions: Record<string, number>, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_versions: versions, channel_values: values };
}

describe.each(HANDLERS)("round trips to FerretDB (%s handler)", (handler) => {
  const server = new TestServer(handler);
  const measured: Record<string, string> = {};
  beforeAll(() => server.init());
  afterAll(async () => {
    console.log(`round trips on ${handler} (commands / sequential round trips): ${JSON.stringify(measured)}`);
    await server.closeAll();
  });

  it("put is 2 commands, putWrites 1, getTuple 3 in at most 2 round trips, history 4 in 2, whatever the depth", async () => {
    const saver = new MongoDBSaver({ client: server.client, dbName: await server.database("rt") });
    await saver.setup();
    const counter = monitor(server);
    const thread = threadId("rt");
    const measure = async (name: string, body: () => Promise<unknown>) => {
      counter.reset();
      await body();
      const got = counter.get();
      measured[name] = `${got.commands} / ${got.roundTrips}`;
      if (process.env.DEBUG_ROUND_TRIPS) console.log(name, counter.names());
      return got;
    };

    let config = { configurable: { thread_id: thread, checkpoint_ns: "" } } as { configurable: Record<string, unknown> };
    const depth = 40;
    for (let i = 0; i < depth; i++) {
      const id = `cp-${String(i).padStart(4, "0")}`;
      // Three channels change at every step, so each put carries a checkpoint document and three blobs.
      const values = { a: `a${i}`, b: [i, { deep: "x".repeat(100) }], c: new Uint8Array([i]) };
      const put = await measure("put", async () => {
        config = (await saver.put(config, checkpoint(id, { a: i + 1, b: i + 1, c: i + 1 }, values), { source: "loop", step: i, parents: {} }, { a: i + 1, b: i + 1, c: i + 1 })) as typeof config;
      });
      expect(put).toEqual({ commands: 2, roundTrips: 2 }); // blobs, then the checkpoint document
      const writes = await measure("putWrites", () => saver.putWrites(config, [["a", `w${i}`], ["b", i], ["c", null]], `task-${i}`));
      expect(writes).toEqual({ commands: 1, roundTrips: 1 });
    }
    // By id, the writes query runs alongside both the checkpoint's and its blobs': one wave of latency.
    expect(await measure("getTuple (by id)", () => saver.getTuple(config))).toMatchObject({ commands: 3 });
    expect(counter.get().roundTrips).toBeLessThanOrEqual(2);
    expect(await measure("getTuple (latest)", () => saver.getTuple({ configurable: { thread_id: thread } }))).toEqual({ commands: 3, roundTrips: 2 });
    // Every ancestor's blob is a whole value, so the history stops at the parent; a channel that no
    // ancestor seeds walks the whole chain, in the same number of queries.
    expect(await measure("getDeltaChannelHistory (by id)", () => saver.getDeltaChannelHistory({ config, channels: ["a", "never-written"] }))).toEqual({ commands: 4, roundTrips: 2 });
    // Without an id core first reads the newest checkpoint whole (3 commands), then asks for the history.
    expect(await measure("getDeltaChannelHistory (latest)", () => saver.getDeltaChannelHistory({ config: { configurable: { thread_id: thread } }, channels: ["never-written"] }))).toEqual({
      commands: 6,
      roundTrips: 4,
    });
    const history = await saver.getDeltaChannelHistory({ config, channels: ["a"] });
    expect(history.a?.writes.map(([, , value]) => value)).toEqual([`w${depth - 2}`]);
    const listed = await measure("list (40 checkpoints, 50 per page)", async () => {
      let n = 0;
      for await (const _ of saver.list({ configurable: { thread_id: thread } })) n++;
      expect(n).toBe(depth);
    });
    expect(listed).toEqual({ commands: 3, roundTrips: 2 });
    expect(await measure("deleteThread", () => saver.deleteThread(thread))).toEqual({ commands: 4, roundTrips: 2 });
  });
});
