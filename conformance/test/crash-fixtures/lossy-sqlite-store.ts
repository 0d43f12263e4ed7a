import { join } from "node:path";
import type { PutWritesRequest } from "@resumable/core";
import { SqliteStore } from "@resumable/sqlite";

/**
 * A deliberately broken store: putWrites resolves but silently drops the writes of the fan-out's
 * "middle" sibling. The crash suite must report them as lost.
 */
export default ({ workDir }: { workDir: string }) => {
  const store = new SqliteStore(join(workDir, "checkpoints.sqlite"));
  const putWrites = store.putWrites.bind(store);
  store.putWrites = async (request: PutWritesRequest) => {
    if (request.writes.some((w) => w.channel === "middle_out")) return;
    await putWrites(request);
  };
  return store;
};
