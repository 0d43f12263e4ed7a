/**
 * The part of better-sqlite3's API this package uses, typed here so that the driver stays a peer
 * dependency and its type package is not needed by users (as Kysely types only what it uses).
 *
 * @module
 */
import { ResumableError } from "@resumable/core";

/** A prepared statement (better-sqlite3 `Statement`). */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  /**
   * better-sqlite3's raw mode: rows as arrays of column values, in column order. Optional: without
   * it, the store reads objects and takes their values in order.
   */
  raw?(toggle?: boolean): SqliteStatement;
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
 * better-sqlite3 is missing, or installed without the native addon it compiles (or downloads) in its
 * install script, or built for another Node.js. The message says which and what to run.
 */
export class SqliteDriverError extends ResumableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SQLITE_DRIVER_UNAVAILABLE", message, options);
  }
}

const HOW_TO_BUILD =
  `better-sqlite3's install script, which builds that addon, did not run:\n` +
  `  - pnpm 10 and later skip dependencies' build scripts until you approve them: run \`pnpm approve-builds\` and select ` +
  `better-sqlite3 (or allow it in pnpm-workspace.yaml: \`allowBuilds: { better-sqlite3: true }\`; pnpm 10 calls the list ` +
  `\`onlyBuiltDependencies\`), then \`pnpm rebuild better-sqlite3\`;\n` +
  `  - npm with --ignore-scripts (or ignore-scripts=true in .npmrc): run \`npm rebuild better-sqlite3\`.\n` +
  `Where no prebuilt addon can be downloaded, the rebuild compiles it and needs python3, make and a C++ compiler ` +
  `(node-gyp may also need npm_config_nodedir pointing at the Node.js headers, e.g. /usr).`;

/**
 * Turns the errors better-sqlite3 throws when its addon cannot be loaded into a {@link SqliteDriverError}
 * that says what to run; returns `undefined` for any other error.
 */
export function translateDriverError(error: unknown, filename: string): SqliteDriverError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const where = `@resumable/sqlite could not open ${JSON.stringify(filename)}`;
  if (/Could not locate the bindings file/i.test(message)) {
    return new SqliteDriverError(`${where}: better-sqlite3 is installed without its native addon (better_sqlite3.node). ${HOW_TO_BUILD}`, { cause: error });
  }
  if (/NODE_MODULE_VERSION|was compiled against a different Node\.js version|invalid ELF header|wrong ELF class/i.test(message)) {
    return new SqliteDriverError(
      `${where}: better-sqlite3's native addon was built for another Node.js (this is ${process.version} on ${process.platform}-${process.arch}). ` +
        `Rebuild it for this one: \`npm rebuild better-sqlite3\` (or \`pnpm rebuild better-sqlite3\`). On Node 20 better-sqlite3 must be 12.x.`,
      { cause: error },
    );
  }
  return undefined;
}

/**
 * Loads better-sqlite3 on first use. A dynamic import works from both the ESM and the CommonJS build
 * (tsc turns it into `require` there), and keeps the driver out of module load for users who pass
 * their own `Database`. better-sqlite3 loads its native addon only when the first database is opened,
 * so the constructor returned here translates that failure ({@link translateDriverError}).
 */
export async function loadDriver(): Promise<SqliteDatabaseConstructor> {
  let mod: { default?: SqliteDatabaseConstructor } & SqliteDatabaseConstructor;
  try {
    mod = (await import("better-sqlite3")) as unknown as typeof mod;
  } catch (error) {
    throw new SqliteDriverError(
      `@resumable/sqlite could not load better-sqlite3 (${error instanceof Error ? error.message : String(error)}). ` +
        `Install it next to this package: \`npm install better-sqlite3@12\` (on Node 20 it must be 12.x).`,
      { cause: error },
    );
  }
  const Driver = mod.default ?? mod;
  return new Proxy(Driver, {
    construct(target, args: unknown[]) {
      try {
        return Reflect.construct(target, args) as SqliteDatabase;
      } catch (error) {
        throw translateDriverError(error, String(args[0])) ?? error;
      }
    },
  });
}
