/**
 * `DynamoDBSaver`: a LangGraph.js checkpointer on DynamoDB, ready to hand to `graph.compile()`.
 *
 * @module
 */
import { ResumableSaver, type ResumableSaverOptions } from "@resumable/core";

import { DynamoDBStore, type DynamoDBConnectOptions, type DynamoDBStoreOptions } from "./dynamodb-store.js";
import type { DynamoDBClientLike } from "./table-client.js";

/** Options of {@link DynamoDBSaver}: the store's (`createTable`, `ttl`...) and the saver's (`serde`...). */
export interface DynamoDBSaverOptions extends Omit<DynamoDBStoreOptions, "tableName">, ResumableSaverOptions {}

/** Options of {@link DynamoDBSaver.connect}. */
export interface DynamoDBSaverConnectOptions extends DynamoDBConnectOptions, ResumableSaverOptions {
  /** Run `setup()` before returning (default `true`). */
  setup?: boolean;
}

/**
 * A LangGraph.js checkpointer (a `BaseCheckpointSaver`) that keeps checkpoints in one DynamoDB table.
 *
 * @example
 * ```ts
 * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
 * import { DynamoDBSaver } from "@resumable/dynamodb";
 * const checkpointer = new DynamoDBSaver(new DynamoDBClient({ region: "eu-west-1" }), "checkpoints", { createTable: true });
 * await checkpointer.setup();
 * const graph = builder.compile({ checkpointer });
 * await graph.invoke(input, { configurable: { thread_id: "order-42" } });
 * ```
 */
export class DynamoDBSaver extends ResumableSaver {
  declare readonly store: DynamoDBStore;

  /**
   * @param client A `DynamoDBClient` (left open by {@link close}).
   * @param tableName The table; call {@link setup} once before use (with `createTable: true` it creates it).
   */
  constructor(client: DynamoDBClientLike, tableName: string, options?: DynamoDBSaverOptions);
  /** @param store A {@link DynamoDBStore} built elsewhere. */
  constructor(store: DynamoDBStore, options?: ResumableSaverOptions);
  constructor(clientOrStore: DynamoDBClientLike | DynamoDBStore, tableNameOrOptions?: string | ResumableSaverOptions, options: DynamoDBSaverOptions = {}) {
    if (clientOrStore instanceof DynamoDBStore) {
      super(clientOrStore, (tableNameOrOptions as ResumableSaverOptions | undefined) ?? {});
    } else {
      super(new DynamoDBStore(clientOrStore, { ...options, tableName: tableNameOrOptions as string }), options);
    }
  }

  /**
   * A saver with a `DynamoDBClient` of its own (from `clientConfig`), set up (unless `setup: false`)
   * and ready to use. {@link close} destroys the client.
   *
   * @example
   * ```ts
   * const checkpointer = await DynamoDBSaver.connect({ tableName: "checkpoints", clientConfig: { region: "eu-west-1" }, createTable: true });
   * ```
   */
  static async connect(options: DynamoDBSaverConnectOptions): Promise<DynamoDBSaver> {
    const saver = new DynamoDBSaver(await DynamoDBStore.connect(options), options);
    return options.setup === false ? saver : saver.ready();
  }
}
