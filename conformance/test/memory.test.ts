// The suite tests itself against the reference store, as Keyv's suite does with its memory adapter:
// every category and every LangChain case must pass here.
import { MemoryStore } from "@resumable/core";

import { runConformance } from "../src/index.js";

runConformance(() => new MemoryStore(), { name: "memory" });

// An item limit makes core split large values into chunks: the same suite must pass through them.
runConformance(() => new MemoryStore({ maxItemBytes: 64 * 1024 }), { name: "memory-chunked", langchain: false });
