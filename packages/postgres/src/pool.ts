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

/**
 * Creates a `pg.Pool` for a connection string. `pg` is loaded only here, so a caller who hands in
 * their own pool needs nothing else installed.
 */
export async function createPool(connectionString: string, options: PostgresPoolOptions = {}): Promise<PostgresPool> {
  let mod: { default?: PgModule } & Partial<PgModule>;
  try {
    mod = (await import("pg")) as unknown as typeof mod;
  } catch (cause) {
    throw new Error(`@resumable/postgres needs the "pg" package to connect from a URL: npm install pg@^8`, { cause });
  }
  const pg = (mod.default ?? mod) as PgModule;
  const pool = new pg.Pool({ connectionTimeoutMillis: 10_000, ...options, connectionString });
  // An idle connection that the server drops (restart, failover) is reported on the pool; with no
  // listener Node would crash the process. The next query simply gets a fresh connection.
  pool.on("error", () => {});
  return pool;
}
