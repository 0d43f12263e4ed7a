/**
 * The chaos test: worker processes killed at random while they resume refund threads through leases.
 *
 * @module
 */
export {
  defaultRecoveryModule,
  formatChaosReport,
  runChaos,
  runTwoProcessInvoke,
  type ChaosOptions,
  type ChaosProgress,
  type ChaosReport,
  type TwoProcessInvokeOptions,
  type TwoProcessInvokeResult,
} from "./harness.js";
export type { ChaosRecoveryModule } from "./worker.js";
export { ChaosLedger, POISON_MESSAGE, POISON_ORDER, chaosRefundGraph } from "./refund.js";
