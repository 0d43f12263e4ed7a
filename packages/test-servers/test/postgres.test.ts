import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase, createTestSchema, getPostgres, startDisposablePostgres } from "../src/index.js";

async function query<R extends Record<string, unknown>>(url: string, sql: string): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe("PostgreSQL test server", () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("finds a server once per process and answers queries", async () => {
    const a = await getPostgres();
    const b = await getPostgres();
    expect(b.url).toBe(a.url);
    const rows = await query<{ one: number }>(a.url, "SELECT 1 AS one");
    expect(rows[0]!.one).toBe(1);
  });

  it("gives each caller its own database and schema", async () => {
    const [db1, db2] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    cleanups.push(db1.drop, db2.drop);
    expect(db1.name).not.toBe(db2.name);
    const rows = await query<{ db: string }>(db1.url, "SELECT current_database() AS db");
    expect(rows[0]!.db).toBe(db1.name);
    const schema = await createTestSchema();
    cleanups.push(schema.drop);
    const found = await query(schema.url, `SELECT 1 FROM pg_namespace WHERE nspname = '${schema.schema}'`);
    expect(found).toHaveLength(1);
  });

  it("kills and restarts a disposable server, which keeps its data", async () => {
    const server = await startDisposablePostgres();
    cleanups.push(() => server.stop());
    await query(server.url, "CREATE TABLE kept (v int); INSERT INTO kept VALUES (7)");
    await server.kill();
    await expect(query(server.url, "SELECT 1")).rejects.toThrow();
    await server.restart();
    const rows = await query<{ v: number }>(server.url, "SELECT v FROM kept");
    expect(rows).toEqual([{ v: 7 }]);
  });
});
