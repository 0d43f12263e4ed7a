import { join } from "node:path";
import type {
  CheckpointStore,
  HistoryQuery,
  ListCheckpointsQuery,
  PutCheckpointRequest,
  PutWritesRequest,
  StoreCommandListener,
  ThreadScope,
} from "@resumable/core";
import { SqliteStore } from "@resumable/sqlite";

/**
 * A deliberately broken store: it writes the checkpoint row first, in a transaction of its own, and
 * its blobs in a second one. A crash between the two leaves a checkpoint that references blobs that
 * do not exist: the crash suite must catch it.
 */
class TornSqliteStore implements CheckpointStore {
  constructor(private readonly inner: SqliteStore) {}
  get capabilities() {
    return this.inner.capabilities;
  }
  setup() {
    return this.inner.setup();
  }
  async putCheckpoint(request: PutCheckpointRequest) {
    await this.inner.putCheckpoint({ ...request, blobs: [], chunks: [] });
    await this.inner.putCheckpoint(request);
  }
  putWrites(request: PutWritesRequest) {
    return this.inner.putWrites(request);
  }
  getCheckpoint(scope: ThreadScope & { checkpointId?: string }) {
    return this.inner.getCheckpoint(scope);
  }
  listCheckpoints(query: ListCheckpointsQuery) {
    return this.inner.listCheckpoints(query);
  }
  getHistory(query: HistoryQuery) {
    return this.inner.getHistory(query);
  }
  getChunks(threadId: string, hash: string) {
    return this.inner.getChunks(threadId, hash);
  }
  getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>) {
    return this.inner.getBlobs(scope, keys);
  }
  deleteThread(threadId: string) {
    return this.inner.deleteThread(threadId);
  }
  instrument(listener: StoreCommandListener | undefined) {
    this.inner.instrument(listener);
  }
  close() {
    return this.inner.close();
  }
}

export default ({ workDir }: { workDir: string }) => new TornSqliteStore(new SqliteStore(join(workDir, "checkpoints.sqlite")));
