/**
 * `PostgresSaver`: a LangGraph.js checkpointer on PostgreSQL, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";

import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from "./pool.js";
import { PostgresStore, type PostgresConnectOptions, type PostgresStoreOptions } from "./postgres-store.js";

/** Options of {@link PostgresSaver}: the store's (`schema`...) and the saver's (`serde`...). */
export interface PostgresSaverOptions extends PostgresStoreOptions, ResumableSaverOptions {}

/** Options of {@link PostgresSaver.connect}. */
export interface PostgresSaverConnectOptions extends PostgresConnectOptions, ResumableSaverOptions {
  /** Run migrations before returning (default `true`). Pass `false` when deploys migrate ahead. */
  setup?: boolean;
}

/**
 * A pool that opens on first use, so that {@link PostgresSaver.fromConnString} can return at once as
 * LangChain's does. It opens through {@link PostgresStore.connect}, so its `pg.Pool` is configured
 * exactly as `connect()` configures its own.
 */
class DeferredPool implements PostgresPool {
  private opening: Promise<PostgresStore> | undefined;

  constructor(private readonly open: () => Promise<PostgresStore>) {}

  private pool(): Promise<PostgresPool> {
    this.opening ??= this.open().catch((error: unknown) => {
      // A later call may succeed (the server came up, pg got installed).
      this.opening = undefined;
      throw error;
    });
    return this.opening.then((store) => store.pool);
  }

  /** Either form of `pg`'s `query`: `(text, values)`, or a named statement's `{ name, text, values }`. */
  async query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PostgresQueryResult<R>> {
    return (await this.pool()).query<R>(text, values);
  }

  async connect(): Promise<PostgresPoolClient> {
    return (await this.pool()).connect();
  }

  async end(): Promise<void> {
    const opening = this.opening;
    this.opening = undefined;
    const store = await opening?.catch(() => undefined);
    await store?.close();
  }
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
  /** The pool {@link fromConnString} opened, which {@link close} ends. */
  private ownedPool: DeferredPool | undefined;

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

  /**
   * A saver for a connection string, returned at once (the pool connects on first use), with the
   * signature of LangChain's `PostgresSaver.fromConnString`, so switching is an import change. As
   * with LangChain's, call {@link setup} once before use (it runs migrations; idempotent); until then
   * calls fail with `StoreNotSetUpError`. {@link close} (or {@link end}) ends the pool.
   *
   * Threads LangChain's saver stored are in its own tables, which this saver does not read: copy them
   * with `resumable-postgres import-langchain` (or `importCheckpoints` from `@resumable/core`).
   *
   * @example
   * ```ts
   * import { PostgresSaver } from "@resumable/postgres"; // was "@langchain/langgraph-checkpoint-postgres"
   * const checkpointer = PostgresSaver.fromConnString(process.env.DATABASE_URL!, { schema: "agents" });
   * await checkpointer.setup();
   * ```
   */
  static fromConnString(connString: string, options: Omit<PostgresSaverConnectOptions, "setup"> = {}): PostgresSaver {
    const pool = new DeferredPool(() => PostgresStore.connect(connString, options));
    const saver = new PostgresSaver(pool, options);
    saver.ownedPool = pool;
    return saver;
  }

  /** Closes the store, and ends the pool when this saver opened it ({@link connect}, {@link fromConnString}). */
  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.ownedPool?.end();
    }
  }

  /** The same as {@link close}, under the name LangChain's `PostgresSaver` uses. */
  async end(): Promise<void> {
    await this.close();
  }
}
