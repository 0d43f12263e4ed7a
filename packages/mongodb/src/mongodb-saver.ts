/**
 * `MongoDBSaver`: a LangGraph.js checkpointer on MongoDB, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";
import type { MongoClient } from "mongodb";

import { MongoDBStore, type MongoDBConnectOptions, type MongoDBStoreOptions } from "./mongodb-store.js";

/** What {@link MongoDBSaver} is built from: a client and a database name (as LangChain's saver takes), and options. */
export interface MongoDBSaverParams extends MongoDBStoreOptions, ResumableSaverOptions {
  /** A `MongoClient`; `close()` leaves it open (the caller owns it). */
  client: MongoClient;
}

/** Options of {@link MongoDBSaver.connect}. */
export interface MongoDBSaverConnectOptions extends MongoDBConnectOptions, ResumableSaverOptions {
  /** Create the indexes before returning (default `true`). */
  setup?: boolean;
}

/**
 * A LangGraph.js checkpointer (a `BaseCheckpointSaver`) that keeps checkpoints in MongoDB, atomic
 * without transactions: each checkpoint becomes visible with every part it needs, or not at all.
 *
 * @example
 * ```ts
 * import { MongoDBSaver } from "@resumable/mongodb";
 * const checkpointer = await MongoDBSaver.connect("mongodb://localhost:27017/agents");
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * await checkpointer.close();
 * ```
 */
export class MongoDBSaver extends ResumableSaver {
  declare readonly store: MongoDBStore;

  /**
   * @param params `{ client, dbName, ...options }` (call {@link setup} once before use), or a
   *   {@link MongoDBStore}.
   */
  constructor(params: MongoDBSaverParams | MongoDBStore, options: ResumableSaverOptions = {}) {
    if (params instanceof MongoDBStore) {
      super(params, options);
    } else {
      const { client, ...rest } = params;
      super(new MongoDBStore(client, rest), { ...rest, ...options });
    }
  }

  /**
   * Connects a client of its own to a `mongodb://` URL (the database is the URL's path unless `dbName`
   * says otherwise), creates the indexes (unless `setup: false`) and returns a saver ready to use.
   * {@link close} closes the client.
   */
  static async connect(url: string, options: MongoDBSaverConnectOptions = {}): Promise<MongoDBSaver> {
    const saver = new MongoDBSaver(await MongoDBStore.connect(url, options), options);
    return options.setup === false ? saver : saver.ready();
  }

  /**
   * Deletes threads whose `ttlSeconds` passed (see {@link MongoDBStore.deleteExpiredThreads}); returns
   * how many were deleted.
   */
  deleteExpiredThreads(options?: { limit?: number }): Promise<number> {
    return this.store.deleteExpiredThreads(options);
  }
}
