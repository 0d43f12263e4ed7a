/**
 * `SqliteSaver`: a LangGraph.js checkpointer on SQLite, ready to hand to `graph.compile()`.
 *
 * @module
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import type {
  ChannelVersions,
  Checkpoint,
  CheckpointListOptions,
  CheckpointMetadata,
  CheckpointTuple,
  PendingWrite,
} from "@langchain/langgraph-checkpoint";
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
  /** Set by {@link fromConnString}: the first call runs {@link setup}, as LangChain's saver does. */
  private setupOnFirstUse = false;
  private settingUp: Promise<void> | undefined;

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

  /**
   * A saver on a file (or `":memory:"`), returned at once, with the signature of LangChain's
   * `SqliteSaver.fromConnString`, so switching is an import change. As LangChain's does, it sets
   * itself up on first use: the first call opens the file and creates or migrates the tables.
   *
   * Threads LangChain's saver stored are in its own tables, which this saver does not read: copy them
   * with `resumable-sqlite import-langchain` (or `importCheckpoints` from `@resumable/core`).
   *
   * @example
   * ```ts
   * import { SqliteSaver } from "@resumable/sqlite"; // was "@langchain/langgraph-checkpoint-sqlite"
   * const checkpointer = SqliteSaver.fromConnString("checkpoints.db");
   * const graph = builder.compile({ checkpointer });
   * ```
   */
  static fromConnString(connStringOrLocalPath: string, options: SqliteSaverOptions = {}): SqliteSaver {
    const saver = new SqliteSaver(connStringOrLocalPath, options);
    saver.setupOnFirstUse = true;
    return saver;
  }

  override async setup(): Promise<void> {
    await super.setup();
    this.setupOnFirstUse = false;
  }

  /** Runs setup once before the first call of a saver from {@link fromConnString}; concurrent first calls share it. */
  private async setUpFirst(): Promise<void> {
    if (!this.setupOnFirstUse) return;
    this.settingUp ??= this.setup().finally(() => {
      this.settingUp = undefined;
    });
    await this.settingUp;
  }

  override async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    await this.setUpFirst();
    return super.getTuple(config);
  }

  override async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    await this.setUpFirst();
    yield* super.list(config, options);
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    await this.setUpFirst();
    return super.put(config, checkpoint, metadata, newVersions);
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    await this.setUpFirst();
    return super.putWrites(config, writes, taskId, taskPath);
  }

  override async deleteThread(threadId: string): Promise<void> {
    await this.setUpFirst();
    return super.deleteThread(threadId);
  }

  override async getDeltaChannelHistory(options: Parameters<ResumableSaver["getDeltaChannelHistory"]>[0]): ReturnType<ResumableSaver["getDeltaChannelHistory"]> {
    await this.setUpFirst();
    return super.getDeltaChannelHistory(options);
  }
}
