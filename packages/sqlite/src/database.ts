/**
 * The part of better-sqlite3's API this package uses, typed here so that the driver stays a peer
 * dependency and its type package is not needed by users (as Kysely types only what it uses).
 *
 * @module
 */

/** A prepared statement (better-sqlite3 `Statement`). */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

/** An open connection (better-sqlite3 `Database`). */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
  /** Whether the connection is open. */
  readonly open: boolean;
  /** Whether a transaction is active on the connection. */
  readonly inTransaction: boolean;
  /** Whether the database lives in memory only (`":memory:"` or an anonymous temporary database). */
  readonly memory: boolean;
  /** The path the database was opened with. */
  readonly name: string;
}

/** better-sqlite3's `Database` constructor, as far as this package calls it. */
export type SqliteDatabaseConstructor = new (filename: string, options?: { timeout?: number }) => SqliteDatabase;

/**
 * Loads better-sqlite3 on first use. A dynamic import works from both the ESM and the CommonJS build
 * (tsc turns it into `require` there), and keeps the driver out of module load for users who pass
 * their own `Database`.
 */
export async function loadDriver(): Promise<SqliteDatabaseConstructor> {
  let mod: { default?: SqliteDatabaseConstructor } & SqliteDatabaseConstructor;
  try {
    mod = (await import("better-sqlite3")) as unknown as typeof mod;
  } catch (error) {
    throw new Error(
      `@resumable/sqlite could not load better-sqlite3 (${error instanceof Error ? error.message : String(error)}). ` +
        `Install it next to this package: \`npm install better-sqlite3@12\` (on Node 20 it must be 12.x).`,
      { cause: error },
    );
  }
  return mod.default ?? mod;
}
