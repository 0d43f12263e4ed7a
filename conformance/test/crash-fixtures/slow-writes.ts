import type { CheckpointStore, PutWritesRequest } from "@resumable/core";

/** How long the slow stores below hold a putWrites back, like a write on another connection. */
export const WRITE_DELAY_MS = 25;

/**
 * Wraps a store so that putWrites takes longer than putCheckpoint, as it may on a database reached
 * over a pool of connections. A saver must still never let a checkpoint land before the writes that
 * were issued before it (LangGraph Python issue #8039).
 */
export function slowWrites<T extends CheckpointStore>(store: T): T {
  const putWrites = store.putWrites.bind(store);
  store.putWrites = async (request: PutWritesRequest) => {
    await new Promise((resolve) => setTimeout(resolve, WRITE_DELAY_MS));
    await putWrites(request);
  };
  return store;
}
