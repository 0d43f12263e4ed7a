import { join } from "node:path";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import { SqliteSaver } from "@resumable/sqlite";
import { WRITE_DELAY_MS } from "./slow-writes.js";

/**
 * A deliberately broken saver: writes are slow (as on a pool of connections) and `put` does not wait
 * for the writes issued before it, so a checkpoint can land before the writes of the step before it
 * (LangGraph Python issue #8039). The crash suite must catch it.
 */
class UnorderedSaver extends BaseCheckpointSaver {
  constructor(private readonly inner: SqliteSaver) {
    super();
  }
  get store() {
    return this.inner.store;
  }
  setup() {
    return this.inner.setup();
  }
  close() {
    return this.inner.close();
  }
  getTuple(config: RunnableConfig) {
    return this.inner.getTuple(config);
  }
  list(config: RunnableConfig, options?: CheckpointListOptions) {
    return this.inner.list(config, options);
  }
  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions) {
    return this.inner.put(config, checkpoint, metadata, newVersions);
  }
  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string) {
    await new Promise((resolve) => setTimeout(resolve, WRITE_DELAY_MS));
    await this.inner.putWrites(config, writes, taskId, taskPath);
  }
  deleteThread(threadId: string) {
    return this.inner.deleteThread(threadId);
  }
  override getDeltaChannelHistory(...args: Parameters<SqliteSaver["getDeltaChannelHistory"]>) {
    return this.inner.getDeltaChannelHistory(...args);
  }
}

export default ({ workDir }: { workDir: string }) => new UnorderedSaver(new SqliteSaver(join(workDir, "checkpoints.sqlite")));
