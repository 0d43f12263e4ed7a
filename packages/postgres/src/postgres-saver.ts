/**
 * `PostgresSaver`: a LangGraph.js checkpointer on PostgreSQL, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";

import type { PostgresPool } from "./pool.js";
import { PostgresStore, type PostgresConnectOptions, type PostgresStoreOptions } from "./postgres-store.js";

/** Options of {@link PostgresSaver}: the store's (`schema`...) and the saver's (`serde`...). */
export interface PostgresSaverOptions extends PostgresStoreOptions, ResumableSaverOptions {}

/** Options of {@link PostgresSaver.connect}. */
export interface PostgresSaverConnectOptions extends PostgresConnectOptions, ResumableSaverOptions {
  /** Run migrations before returning (default `true`). Pass `false` when deploys migrate ahead. */
  setup?: boolean;
}

/**
 * A LangGraph.js checkpointer (a `BaseCheckpointSaver`) that keeps checkpoints in PostgreSQL.
 *
 * @example
 * ```ts
 * import { PostgresSaver } from "@resumable/postgres";
 * const checkpointer = await PostgresSaver.connect(process.env.DATABASE_URL!, { schema: "agents" });
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * await checkpointer.close();
 * ```
 */
export class PostgresSaver extends ResumableSaver {
  declare readonly store: PostgresStore;

  /**
   * @param pool A `pg.Pool` (left open by {@link close}), or a {@link PostgresStore}. Call
   *   {@link setup} once before use, or build the saver with {@link PostgresSaver.connect}.
   */
  constructor(pool: PostgresPool | PostgresStore, options: PostgresSaverOptions = {}) {
    super(pool instanceof PostgresStore ? pool : new PostgresStore(pool, options), options);
  }

  /**
   * Opens a pool for a connection string, runs migrations (unless `setup: false`) and returns a saver
   * ready to use. {@link close} ends the pool.
   */
  static async connect(connectionString: string, options: PostgresSaverConnectOptions = {}): Promise<PostgresSaver> {
    const saver = new PostgresSaver(await PostgresStore.connect(connectionString, options), options);
    return options.setup === false ? saver : saver.ready();
  }
}
