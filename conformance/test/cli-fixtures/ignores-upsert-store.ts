// A store that breaks one rule: it never replaces a pending write, so an INTERRUPT can never become a
// RESUME. The CLI must report write-rules as failed and exit non-zero.
import { MemoryStore, type PutWritesRequest } from "@resumable/core";

class IgnoresUpsertStore extends MemoryStore {
  override putWrites(request: PutWritesRequest): Promise<void> {
    return super.putWrites({ ...request, mode: "ignore" });
  }
}

export default () => new IgnoresUpsertStore();
