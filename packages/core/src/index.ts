/**
 * `@resumable/core`: the storage contract, the saver that implements LangGraph.js's checkpointer API
 * on top of any store, serialization helpers, and the in-memory reference store.
 *
 * @packageDocumentation
 */
export * from "./store.js";
export * from "./errors.js";
export {
  ResumableSaver,
  sortWrites,
  type ClaimLeaseOptions,
  type PruneOptions,
  type ResumableSaverOptions,
  type ThreadStatusUpdate,
  type WithLeaseOptions,
} from "./saver.js";
export {
  DEFAULT_STATUS_RESOLUTION_MS,
  MAX_INTERRUPT_JSON_CHARS,
  MAX_STATUS_ERROR_CHARS,
  MAX_THREADS_PAGE,
  applyPatchToRecord,
  checkpointState,
  errorMessage,
  hasPendingTasks,
  mergeInterrupts,
  plainJson,
  recordOfWrite,
  statusPatchOfWrites,
  toThreadStatus,
  type ListThreadsOptions,
  type ThreadPage,
  type ThreadStatus,
} from "./thread-status.js";
export { MemoryStore, type MemoryStoreOptions } from "./memory-store.js";
export type { CopyThreadResult } from "./copy-thread.js";
export {
  checkpointKey,
  planRetention,
  selectForPrune,
  type CheckpointFacts,
  type PruneSelection,
  type RetentionPlan,
  type RetentionResult,
} from "./retention.js";
export {
  EMPTY_VALUE,
  canonicalJson,
  canonicalJsonText,
  findUnserializable,
  isDefaultSerde,
  joinChunks,
  splitIfLarge,
} from "./serialization.js";
export { idempotencyKey, idempotencyKeyParts, type IdempotencyConfig, type IdempotencyKeyParts } from "./idempotency.js";
export { ID_LIMITS, ID_RULES, checkIdentifier, type IdentifierRule } from "./ids.js";
export { MAX_FILTER_KEYS, canonicalFilter } from "./metadata-filter.js";
export { RUNTIME_METADATA_KEYS } from "./metadata-form.js";
export { MAX_VALUE_DEPTH, dumpsJsonPlus } from "./json-plus.js";
export {
  CheckpointImportError,
  formatImportProgress,
  formatImportResult,
  importCheckpoints,
  type ImportCheckpointsOptions,
  type ImportProgress,
  type ImportResult,
} from "./import-checkpoints.js";
export { MAX_TTL_SECONDS, threadTtlSettings, type ThreadTtlSettings } from "./thread-ttl.js";
export { parseCommandLine, processOutput, type CliOutput, type CommandLine, type CommandLineSpec, type CommandValues, type ParseArgsOptionsConfig } from "./cli.js";
