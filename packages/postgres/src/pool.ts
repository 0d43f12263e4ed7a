import { InvalidConfigError } from "@resumable/core";

/**
 * The part of `pg` this package uses, typed as interfaces (as Kysely's `PostgresPool` does), so that
 * `pg` stays a peer dependency and any compatible pool fits.
 *
 * @module
 */

/** A query result: only the rows are read. */
export interface PostgresQueryResult<R> {
  rows: R[];
}

/** Anything that runs a parameterized query: a pool or one of its clients. */
export interface PostgresQueryable {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PostgresQueryResult<R>>;
}

/** A client checked out of a pool, for a transaction. */
export interface PostgresPoolClient extends PostgresQueryable {
  /** Returns the client to the pool; pass an error to have the pool discard it. */
  release(error?: Error | boolean): void;
}

/** A connection pool, such as `new pg.Pool(...)`. */
export interface PostgresPool extends PostgresQueryable {
  connect(): Promise<PostgresPoolClient>;
  end(): Promise<void>;
}

/** Options passed to `new pg.Pool(...)` by the convenience constructors (see pg's `PoolConfig`). */
export interface PostgresPoolOptions {
  /** Most connections the pool opens (pg's default is 10). */
  max?: number;
  /** Milliseconds to wait for a connection before failing (pg's default: wait forever). */
  connectionTimeoutMillis?: number;
  /** Milliseconds an idle connection stays open. */
  idleTimeoutMillis?: number;
  /** Any other `pg.PoolConfig` field. */
  [option: string]: unknown;
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => PostgresPool & {
    on(event: "error", listener: (error: Error) => void): unknown;
  };
}

/** Server-side timeouts the store sets on the pools it creates; see {@link createPool}. */
export interface PostgresTimeouts {
  /** `lock_timeout`: longest wait for a lock, in milliseconds; 0 waits forever. */
  lockTimeoutMs: number;
  /** `statement_timeout`: longest run of one statement, in milliseconds; 0 means no limit. */
  statementTimeoutMs: number;
}

/** What the store's own pools use unless told otherwise. */
export const DEFAULT_TIMEOUTS: PostgresTimeouts = Object.freeze({ lockTimeoutMs: 10_000, statementTimeoutMs: 60_000 });

/**
 * Refuses a connection string that is not a PostgreSQL URL before pg would guess (an empty string
 * silently means localhost; "not a url" becomes host "base").
 */
export function checkConnectionString(connectionString: unknown): string {
  const example = `e.g. "postgres://user:password@localhost:5432/app"`;
  if (typeof connectionString !== "string" || connectionString.trim() === "") {
    throw new InvalidConfigError(
      "connectionString",
      `@resumable/postgres: the connection string is ${typeof connectionString === "string" ? "empty" : `not a string (${typeof connectionString})`}; pass a PostgreSQL URL, ${example}.`,
    );
  }
  let url: URL | undefined;
  try {
    url = new URL(connectionString);
  } catch {
    url = undefined;
  }
  if (!url || !["postgres:", "postgresql:", "socket:"].includes(url.protocol)) {
    throw new InvalidConfigError(
      "connectionString",
      `@resumable/postgres: ${JSON.stringify(connectionString.length > 80 ? `${connectionString.slice(0, 80)}…` : connectionString)} is not a PostgreSQL URL; ` +
        `it must start with postgres:// or postgresql:// (or socket: for a Unix socket), ${example}.`,
    );
  }
  return connectionString;
}

/**
 * Creates a `pg.Pool` for a connection string. `pg` is loaded only here, so a caller who hands in
 * their own pool needs nothing else installed. Its connections start with `lock_timeout` and
 * `statement_timeout` set (server-side, so a timed-out write is cancelled, never half-known), unless
 * `options` sets them itself.
 */
export async function createPool(
  connectionString: string,
  options: PostgresPoolOptions = {},
  timeouts: PostgresTimeouts = DEFAULT_TIMEOUTS,
): Promise<PostgresPool> {
  checkConnectionString(connectionString);
  let mod: { default?: PgModule } & Partial<PgModule>;
  try {
    mod = (await import("pg")) as unknown as typeof mod;
  } catch (cause) {
    throw new Error(`@resumable/postgres needs the "pg" package to connect from a URL: npm install pg@^8`, { cause });
  }
  const pg = (mod.default ?? mod) as PgModule;
  const pool = new pg.Pool({
    connectionTimeoutMillis: 10_000,
    lock_timeout: timeouts.lockTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
    ...options,
    connectionString,
  });
  // An idle connection that the server drops (restart, failover) is reported on the pool; with no
  // listener Node would crash the process. The next query simply gets a fresh connection.
  pool.on("error", () => {});
  return pool;
}
