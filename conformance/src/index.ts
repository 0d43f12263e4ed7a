/**
 * `@resumable/conformance`: the contract suite for LangGraph.js checkpointers. Run it from vitest with
 * {@link runConformance}, from a script with {@link runChecks}, or from the shell with
 * `resumable-conformance <module>`.
 *
 * @packageDocumentation
 */
export * from "./types.js";
export * from "./categories/index.js";
export { runConformance, type RunConformanceOptions } from "./vitest.js";
export { registerLangchainValidation, langchainCheckpointerName } from "./langchain.js";
export {
  buildReport,
  combine,
  executeCheck,
  runCategory,
  runCheck,
  runChecks,
  runContractSection,
  selectCategories,
  type RunChecksOptions,
} from "./runner.js";
export { formatReport } from "./report.js";
export type { SectionRunner } from "./sections.js";
export { InvalidSubjectError, SubjectPool, isCheckpointSaver, isCheckpointStore, probeSubject, toTarget } from "./subject.js";
export { ConformanceFailure } from "./helpers.js";
export {
  CHAT_KINDS,
  chatGraph,
  chatTurns,
  everyTuple,
  messageView,
  mixedChatGraph,
  question,
  stateAt,
  tupleView,
  type ChatGraph,
  type ChatKind,
} from "./retention-fixtures.js";
export * from "./crash/index.js";
export * from "./chaos/index.js";
export { crashReportSection, crashSection, type CrashSectionOptions } from "./crash-section.js";
export * as records from "./records.js";
