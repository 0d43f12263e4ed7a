/**
 * Counting database round trips by wrapping the client a saver talks through.
 *
 * Every backend is counted at the same seam: a statement executed (SQLite), a query sent (pg), a
 * command reported by a Resumable store's `instrument` hook. Counting is off unless a measurement
 * turns it on, so setup and byte measurements never add to a figure.
 *
 * @module
 */
import type Database from "better-sqlite3";
import type pg from "pg";

/** Counts round trips while enabled. */
export class RoundTripCounter {
  private enabled = false;
  private count = 0;

  /** Records one round trip, if counting. */
  hit(): void {
    if (this.enabled) this.count += 1;
  }

  /** Starts counting from zero. */
  start(): void {
    this.count = 0;
    this.enabled = true;
  }

  /** Stops counting and returns the count since {@link start}. */
  stop(): number {
    this.enabled = false;
    return this.count;
  }
}

const STATEMENT_METHODS = ["run", "get", "all", "iterate"] as const;

/**
 * Counts every statement a better-sqlite3 connection executes: each `run`/`get`/`all`/`iterate` of a
 * prepared statement, each `exec`, and the BEGIN and COMMIT of each `transaction()` call. Must be
 * applied before the saver prepares its statements (LangChain's SQLite saver prepares some in setup).
 */
export function countSqliteConnection(db: Database.Database, counter: RoundTripCounter): void {
  const prepare = db.prepare.bind(db);
  db.prepare = ((source: string) => {
    const statement = prepare(source) as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const method of STATEMENT_METHODS) {
      const original = statement[method]!.bind(statement);
      statement[method] = (...args: unknown[]) => {
        counter.hit();
        return original(...args);
      };
    }
    return statement;
  }) as unknown as typeof db.prepare;
  const exec = db.exec.bind(db);
  db.exec = ((source: string) => {
    counter.hit();
    return exec(source);
  }) as typeof db.exec;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    const wrapped = transaction(fn);
    const counted = (...args: unknown[]) => {
      counter.hit(); // BEGIN
      const result = wrapped(...args);
      counter.hit(); // COMMIT
      return result;
    };
    return Object.assign(counted, { deferred: counted, immediate: counted, exclusive: counted });
  }) as unknown as typeof db.transaction;
}

/** Counts every query sent by any client of `pool` (including `pool.query`, which borrows a client). */
export function countPgPool(pool: pg.Pool, counter: RoundTripCounter): void {
  pool.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      counter.hit();
      return query(...args);
    };
  });
}
