/**
 * `SqliteSaver`: a LangGraph.js checkpointer on SQLite, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";

import type { SqliteDatabase } from "./database.js";
import { SqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";

/** Options of {@link SqliteSaver}: the store's (`synchronous`, `busyTimeoutMs`...) and the saver's (`serde`...). */
export interface SqliteSaverOptions extends SqliteStoreOptions, ResumableSaverOptions {}

/**
 * A LangGraph.js checkpointer (a `BaseCheckpointSaver`) that keeps checkpoints in one SQLite file.
 *
 * @example
 * ```ts
 * import { SqliteSaver } from "@resumable/sqlite";
 * const checkpointer = await SqliteSaver.connect("checkpoints.db");
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * await checkpointer.close();
 * ```
 */
export class SqliteSaver extends ResumableSaver {
  declare readonly store: SqliteStore;

  /**
   * @param database A file path, `":memory:"` or an open better-sqlite3 `Database` (left open by
   *   {@link close}). Call {@link setup} once before use, or build it with {@link SqliteSaver.connect}.
   */
  constructor(database: string | SqliteDatabase, options: SqliteSaverOptions = {}) {
    super(new SqliteStore(database, options), options);
  }

  /** A saver on a file (or `":memory:"`); the file is opened on first use. Call {@link setup} before use. */
  static fromPath(path: string, options: SqliteSaverOptions = {}): SqliteSaver {
    return new SqliteSaver(path, options);
  }

  /** Opens the database, creates or migrates its tables, and returns a saver ready to use. */
  static async connect(database: string | SqliteDatabase, options: SqliteSaverOptions = {}): Promise<SqliteSaver> {
    return new SqliteSaver(database, options).ready();
  }
}
