/**
 * `@resumable/recovery`: run many LangGraph.js workers on one database. {@link RecoveryRunner} claims
 * unfinished threads through leases, resumes them, counts attempts and dead-letters the ones that
 * keep failing; the `resumable-recovery` CLI shows a database's unfinished, interrupted and
 * dead-lettered threads.
 *
 * @packageDocumentation
 */
export {
  RecoveryRunner,
  backoffDelay,
  defaultWorkerId,
  type BackoffOptions,
  type RecoverableState,
  type RecoveryEvent,
  type RecoveryOutcome,
  type RecoveryPass,
  type RecoveryRunnerOptions,
} from "./recovery-runner.js";
export { breakpointOf, leasedGraph, type RecoverableGraph } from "./graph.js";
