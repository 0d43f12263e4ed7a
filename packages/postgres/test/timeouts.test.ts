/**
 * A put blocked by another transaction's lock never waits forever, and its error says whether the
 * write may still land: server-side timeouts (the store's defaults) cancel it, a client-side
 * `query_timeout` leaves its outcome unknown. Bad connection strings fail at once, saying why.
 */
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { InvalidConfigError, StoreTimeoutError } from "@resumable/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { PostgresSaver } from "../src/index.js";
import { TestDb, threadId } from "./helpers.js";

const db = new TestDb();
beforeAll(() => db.init());
afterAll(() => db.closeAll());

const meta = { source: "loop" as const, step: 0, parents: {} };
const checkpoint = () => ({ ...emptyCheckpoint(), id: uuid6(0), channel_values: { n: 1 }, channel_versions: { n: 1 } });

/** Holds an exclusive lock on the checkpoints table until the returned function is called. */
async function lockCheckpoints(): Promise<() => Promise<void>> {
  const client = await db.pool().connect();
  await client.query("BEGIN");
  await client.query("LOCK TABLE public.resumable_checkpoints IN ACCESS EXCLUSIVE MODE");
  return async () => {
    await client.query("COMMIT");
    client.release();
  };
}

describe("a put blocked by a lock", () => {
  it("the store's own pool sets lock_timeout and statement_timeout by default", async () => {
    const saver = await PostgresSaver.connect(db.url);
    const store = saver.store;
    const [lock] = (await store.pool.query<{ lock_timeout: string }>("SHOW lock_timeout")).rows;
    const [statement] = (await store.pool.query<{ statement_timeout: string }>("SHOW statement_timeout")).rows;
    expect(lock?.lock_timeout).toBe("10s");
    expect(statement?.statement_timeout).toBe("1min");
    await saver.close();
  });

  it("fails after lockTimeoutMs with StoreTimeoutError, outcome not-applied, and nothing lands", async () => {
    const saver = await PostgresSaver.connect(db.url, { lockTimeoutMs: 300 });
    const thread = threadId();
    const release = await lockCheckpoints();
    let err: unknown;
    try {
      err = await saver.put({ configurable: { thread_id: thread } }, checkpoint(), meta, { n: 1 }).catch((e: unknown) => e);
    } finally {
      await release();
    }
    expect(err).toBeInstanceOf(StoreTimeoutError);
    expect((err as StoreTimeoutError).outcome).toBe("not-applied");
    expect((err as Error).message).toMatch(/nothing of it was stored/);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await saver.getTuple({ configurable: { thread_id: thread } })).toBeUndefined();
    await saver.close();
  }, 30_000);

  it("with pg's client-side query_timeout, fails with StoreTimeoutError, outcome unknown (and the write does land later)", async () => {
    const saver = new PostgresSaver(db.pool({ query_timeout: 300 }));
    await saver.setup();
    const thread = threadId();
    const release = await lockCheckpoints();
    let err: unknown;
    try {
      err = await saver.put({ configurable: { thread_id: thread } }, checkpoint(), meta, { n: 1 }).catch((e: unknown) => e);
    } finally {
      await release();
    }
    expect(err).toBeInstanceOf(StoreTimeoutError);
    expect((err as StoreTimeoutError).outcome).toBe("unknown");
    expect((err as Error).message).toMatch(/outcome is unknown/);
    // Why "unknown" is the honest answer: the server finishes the statement once the lock is gone.
    let landed = false;
    for (let i = 0; i < 50 && !landed; i += 1) {
      landed = (await saver.getTuple({ configurable: { thread_id: thread } })) !== undefined;
      if (!landed) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(landed).toBe(true);
  }, 30_000);
});

describe("bad connection strings fail at connect", () => {
  it("an empty string is refused instead of silently trying localhost", async () => {
    await expect(PostgresSaver.connect("")).rejects.toBeInstanceOf(InvalidConfigError);
  });

  it("a string that is not a URL is refused, naming what a URL looks like", async () => {
    const err = await PostgresSaver.connect("not a url").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as Error).message).toMatch(/not a PostgreSQL URL.*postgres:\/\//);
  });

  it("a negative lockTimeoutMs is refused", async () => {
    await expect(PostgresSaver.connect(db.url, { lockTimeoutMs: -1 })).rejects.toBeInstanceOf(InvalidConfigError);
  });
});
