/**
 * A PostgreSQL server for the benchmark, and the settings that decide what its commits cost.
 *
 * The test servers run with `fsync=off` (fine for tests, wrong for `sync` durability figures), and
 * those settings are given on the command line, where no `ALTER SYSTEM` can override them. So when
 * no URL is given and PostgreSQL's binaries are installed, the benchmark starts a server of its own
 * with the durable defaults (`fsync=on`, `synchronous_commit=on`, `full_page_writes=on`), on the real
 * disk. Otherwise it uses `RESUMABLE_POSTGRES_URL` or `@resumable/test-servers`, and reports what it
 * found.
 *
 * @module
 */
import { execFile, spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { findPostgresBinDir, freePort, getPostgres } from "@resumable/test-servers";

const run = promisify(execFile);

/** The commit-cost settings of a PostgreSQL server, as it reports them. */
export interface PostgresSettings {
  version: string;
  fsync: string;
  synchronousCommit: string;
  fullPageWrites: string;
}

/** A server the benchmark can create databases on. */
export interface BenchPostgres {
  /** Superuser URL of the `postgres` database. */
  url: string;
  /** Where it came from. */
  source: "env" | "bench-durable" | "test-servers";
  settings: PostgresSettings;
  /** Stops the server when the benchmark started it. */
  stop(): Promise<void>;
}

/** Reads version, fsync, synchronous_commit and full_page_writes. */
export async function readPostgresSettings(url: string): Promise<PostgresSettings> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    const show = async (name: string) => String((await client.query(`SHOW ${name}`)).rows[0]?.[name] ?? "?");
    return {
      version: await show("server_version"),
      fsync: await show("fsync"),
      synchronousCommit: await show("synchronous_commit"),
      fullPageWrites: await show("full_page_writes"),
    };
  } finally {
    await client.end();
  }
}

function asServerUser(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ["runuser", ["-u", "postgres", "--", command, ...args]] : [command, args];
}

const running = new Set<() => Promise<void>>();

/** Stops every server this process started and has not stopped yet (for signal handlers). */
export async function stopAllBenchPostgres(): Promise<void> {
  await Promise.allSettled([...running].map((stop) => stop()));
}

/**
 * Starts a PostgreSQL server with durable defaults in a fresh directory under the system's temp
 * directory (which the server's user can reach, unlike a private scratch directory of root's).
 */
async function startDurablePostgres(binDir: string): Promise<{ url: string; stop(): Promise<void> }> {
  const base = mkdtempSync(join(tmpdir(), "resumable-bench-pg-"));
  if (process.getuid?.() === 0) {
    const uid = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const gid = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    if (uid.status !== 0) throw new Error("running as root, but there is no `postgres` user to run the server as");
    chownSync(base, Number(uid.stdout.trim()), Number(gid.stdout.trim()));
  }
  const dataDir = join(base, "data");
  const exec = (tool: string, args: string[]) => {
    const [command, fullArgs] = asServerUser(join(binDir, tool), args);
    return run(command, fullArgs, { timeout: 120_000 });
  };
  await exec("initdb", ["-D", dataDir, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"]);
  const port = await freePort();
  await exec("pg_ctl", ["-D", dataDir, "-l", join(base, "server.log"), "-w", "-t", "60", "-o", `-p ${port} -h 127.0.0.1 -k ${base}`, "start"]);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    running.delete(stop);
    try {
      await exec("pg_ctl", ["-D", dataDir, "-m", "fast", "-w", "stop"]);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  };
  running.add(stop);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
}

/**
 * Finds a server: `RESUMABLE_POSTGRES_URL`, else a durable server of the benchmark's own when the
 * binaries exist, else whatever `@resumable/test-servers` provides. Throws when there is none.
 */
export async function findBenchPostgres(): Promise<BenchPostgres> {
  const fromEnv = process.env.RESUMABLE_POSTGRES_URL;
  if (fromEnv) return { url: fromEnv, source: "env", settings: await readPostgresSettings(fromEnv), stop: async () => {} };
  const binDir = findPostgresBinDir();
  if (binDir) {
    const server = await startDurablePostgres(binDir);
    try {
      return { url: server.url, source: "bench-durable", settings: await readPostgresSettings(server.url), stop: server.stop };
    } catch (error) {
      await server.stop();
      throw error;
    }
  }
  const server = await getPostgres();
  return { url: server.url, source: "test-servers", settings: await readPostgresSettings(server.url), stop: () => server.stop() };
}

/** The URL of database `name` on the server of `url`. */
export function databaseUrl(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/**
 * Logical bytes (per column: `octet_length` of text and bytea, of the text of json/jsonb, else
 * `pg_column_size`) and physical bytes (`pg_total_relation_size` of every table, which includes its
 * indexes and TOAST) of every table outside the system schemas, after `VACUUM`.
 */
export async function measurePostgresDatabase(url: string): Promise<{ logical: number; physical: number }> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query("VACUUM");
    const columns = (
      await client.query<{ table_schema: string; table_name: string; column_name: string; data_type: string }>(
        `SELECT c.table_schema, c.table_name, c.column_name, c.data_type
           FROM information_schema.columns c
           JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
          WHERE t.table_type = 'BASE TABLE' AND c.table_schema NOT IN ('pg_catalog', 'information_schema')`,
      )
    ).rows;
    const byTable = new Map<string, string[]>();
    const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
    for (const column of columns) {
      const table = `${ident(column.table_schema)}.${ident(column.table_name)}`;
      const col = ident(column.column_name);
      const type = column.data_type;
      const expr =
        type === "bytea" || type === "text" || type.startsWith("character")
          ? `octet_length(${col})`
          : type === "json" || type === "jsonb"
            ? `octet_length(${col}::text)`
            : `pg_column_size(${col})`;
      byTable.set(table, [...(byTable.get(table) ?? []), `COALESCE(SUM(${expr}), 0)`]);
    }
    let logical = 0;
    for (const [table, sums] of byTable) {
      const row = (await client.query(`SELECT (${sums.join(" + ")})::bigint AS bytes FROM ${table}`)).rows[0] as { bytes: string };
      logical += Number(row.bytes);
    }
    const physicalRow = (
      await client.query(
        `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')`,
      )
    ).rows[0] as { bytes: string };
    return { logical, physical: Number(physicalRow.bytes) };
  } finally {
    await client.end();
  }
}
