import { MemoryStore } from "@resumable/core";

/** The in-memory reference store: it cannot outlive its process, so the crash suite does not apply. */
export default () => new MemoryStore();
