import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import { PostgresSaver, PostgresStore, SCHEMA_VERSION } from "../src/index.js";
import { TestDb } from "./helpers.js";

const run = promisify(execFile);
const tsx = createRequire(import.meta.url).resolve("tsx");
const bin = fileURLToPath(new URL("../bin/resumable-postgres-migrate.mjs", import.meta.url));
const cli = (...args: string[]) =>
  run(process.execPath, ["--conditions", "dev-source", "--import", tsx, bin, ...args], { timeout: 120_000, env: { ...process.env, DATABASE_URL: "" } });

const db = new TestDb();
beforeAll(() => db.init());
afterAll(() => db.closeAll());

describe("migrations ahead of a deploy", () => {
  it("run from the resumable-postgres-migrate command, then setup() finds nothing to do", async () => {
    const { stdout } = await cli("--schema", "deployed", db.url);
    expect(stdout).toContain(`schema "deployed" is at version ${SCHEMA_VERSION}`);
    const { rows } = await db.pool().query("SELECT count(*)::int AS n FROM deployed.resumable_migrations");
    expect(rows[0].n).toBe(SCHEMA_VERSION);
    expect(await PostgresStore.migrate(db.url, { schema: "deployed" })).toBe(SCHEMA_VERSION);
    const again = await db.pool().query("SELECT count(*)::int AS n FROM deployed.resumable_migrations");
    expect(again.rows[0].n).toBe(SCHEMA_VERSION);
  });

  it("fail with a clear message and a non-zero exit when there is no URL or the schema is newer", async () => {
    await expect(cli()).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("no database URL") });
    await PostgresStore.migrate(db.url, { schema: "future" });
    await db.pool().query(`INSERT INTO future.resumable_migrations (version, description) VALUES (${SCHEMA_VERSION + 1}, 'from the future')`);
    await expect(cli("--schema=future", db.url)).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining("newer than this package knows") });
  });

  it("let a role without CREATE rights start with setup() once a deploy has migrated", async () => {
    await PostgresStore.migrate(db.url, { schema: "locked" });
    const role = `app_${process.pid}_${Date.now()}`;
    const admin = db.pool();
    await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'app-secret'`);
    try {
      await admin.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      await admin.query(`GRANT USAGE ON SCHEMA locked TO ${role}`);
      await admin.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA locked TO ${role}`);
      const url = new URL(db.url);
      url.username = role;
      url.password = "app-secret";
      const saver = await PostgresSaver.connect(url.toString(), { schema: "locked" });
      try {
        expect(await saver.getTuple({ configurable: { thread_id: "nothing-yet" } })).toBeUndefined();
      } finally {
        await saver.close();
      }
      // In a schema nobody migrated, the same role gets PostgreSQL's refusal, not a half-made schema.
      await expect(PostgresSaver.connect(url.toString(), { schema: "unmigrated" })).rejects.toThrow(/permission denied/);
    } finally {
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
    }
  });
});
