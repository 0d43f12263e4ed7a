// The contract categories and LangChain's validation cases with whole-thread TTL on (an hour, reads
// refreshing it): the expiry row each write moves and the live-thread condition on every read change
// nothing a saver can observe while threads are live.
import { join } from "node:path";

import { runConformance } from "@resumable/conformance";

import { SqliteStore } from "../src/index.js";

runConformance(({ workDir }: { workDir: string }) => new SqliteStore(join(workDir, "checkpoints.sqlite"), { synchronous: "NORMAL", ttlSeconds: 3600, refreshOnRead: true }), {
  name: "sqlite-ttl",
  crash: false,
});
