import { records } from "@resumable/conformance";
import { createTestDatabase, type TestDatabase } from "@resumable/test-servers";
import pg from "pg";

import type { PostgresPool, PostgresPoolClient } from "../src/index.js";

/** A fresh database for one test file, and pools on it that `closeAll()` ends. */
export class TestDb {
  private db: TestDatabase | undefined;
  private readonly pools: pg.Pool[] = [];

  async init(): Promise<this> {
    this.db = await createTestDatabase();
    return this;
  }

  get url(): string {
    if (!this.db) throw new Error("TestDb.init() was not awaited");
    return this.db.url;
  }

  pool(options: pg.PoolConfig = {}): pg.Pool {
    const pool = new pg.Pool({ connectionString: this.url, max: 4, ...options });
    pool.on("error", () => {});
    this.pools.push(pool);
    return pool;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.pools.splice(0).map((pool) => pool.end().catch(() => {})));
    await this.db?.drop();
  }
}

/**
 * Wraps a pool so that every message that goes to the server and waits for its answer counts as one
 * round trip: `pool.query` and each `client.query` of a checked-out client.
 */
export function countingPool(inner: PostgresPool): { pool: PostgresPool; count: () => number; reset: () => void; sql: string[] } {
  const sql: string[] = [];
  const pool: PostgresPool = {
    query: (text, values) => {
      sql.push(sqlText(text));
      return inner.query(text, values);
    },
    connect: async () => {
      const client = await inner.connect();
      const wrapped: PostgresPoolClient = {
        query: (text, values) => {
          sql.push(sqlText(text));
          return client.query(text, values);
        },
        release: (error) => client.release(error),
      };
      return wrapped;
    },
    end: () => inner.end(),
  };
  return { pool, sql, count: () => sql.length, reset: () => void sql.splice(0) };
}

/** The SQL of a query, given as text or as a named statement's `{ name, text, values }`. */
function sqlText(query: string | { text: string }): string {
  return typeof query === "string" ? query : query.text;
}

let counter = 0;
/** A thread id no other test uses. */
export const threadId = (label = "t"): string => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

// Record builders shared with every backend's store-level tests.
export const { text, json, empty, record, blob, write, cid, decode } = records;
