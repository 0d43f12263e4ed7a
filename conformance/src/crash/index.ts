/**
 * The crash-injection suite: real LangGraph.js graphs in child processes, killed with SIGKILL after
 * every database command, resumed by a fresh process, and checked against an uncrashed run.
 *
 * @module
 */
export { runCrashSuite, sampleKs, DURABILITY_MODES, type CrashSuiteOptions, type CrashCell, type CrashRow, type CrashReport } from "./harness.js";
export { formatCrashReport, writeCrashReport } from "./report.js";
export { CRASH_GRAPHS, type CrashGraph, type NodeEffects } from "./graphs.js";
export type { CrashStoreFactory, CrashTarget } from "./child.js";
export type { Durability, KillPoint, CommandCounting } from "./protocol.js";
export { runRetentionCrashSweep, type RetentionCrashOptions, type RetentionCrashReport, type RetentionKillPoint } from "./retention-sweep.js";
export type { RetentionOperation } from "./retention-child.js";
