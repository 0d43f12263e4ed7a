import { validate } from "@langchain/langgraph-checkpoint-validation";

import { MemoryStore, ResumableSaver } from "../src/index.js";

// LangChain's own suite, over the reference store with a tiny item limit so that every value goes
// through core's chunking path as well as the plain one (the conformance suite runs the plain one).
validate({
  checkpointerName: "resumable:memory-chunked",
  createCheckpointer: () => new ResumableSaver(new MemoryStore({ maxItemBytes: 16 })),
});
