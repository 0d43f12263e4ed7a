/**
 * Ana's refund as a LangGraph.js graph: lookup → check_policy → approve (a human, through
 * `interrupt()`) → charge_card → email. The card is charged through a payments ledger whose unique key
 * is the task's idempotency key, so a re-run of charge_card after a crash charges nothing.
 *
 * @module
 */
import { Annotation, END, START, StateGraph, interrupt, type BaseCheckpointSaver, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { idempotencyKey } from "@resumable/core";
import type { Ledger } from "./ledger.js";

export const RefundState = Annotation.Root({
  orderId: Annotation<string>(),
  customer: Annotation<string>(),
  amount: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  eligible: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
  approvedBy: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
  receipt: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
  emailed: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
});

type State = typeof RefundState.State;

/** What the worker process hooks into the graph. */
export interface RefundHooks {
  /** Which worker runs the node (for the ledger's `runs` table). */
  worker: number;
  /** Called inside charge_card after the charge and before the node returns. */
  afterCharge?: () => void;
}

/** Builds the refund graph over a checkpointer and a payments ledger. */
export function buildRefundGraph(checkpointer: BaseCheckpointSaver, ledger: Ledger, hooks: RefundHooks) {
  const ran = (node: string, note = "") => ledger.recordRun(hooks.worker, node, note);
  return new StateGraph(RefundState)
    .addNode("lookup", (state: State) => {
      ran("lookup");
      return { amount: state.orderId === "A-1001" ? 42 : 10 };
    })
    .addNode("check_policy", (state: State) => {
      ran("check_policy");
      return { eligible: state.amount <= 100 };
    })
    .addNode("approve", (state: State) => {
      // The run stops here until a human answers; the answer is the value of `interrupt()` on resume.
      const decision = interrupt({ question: `Refund ${state.amount} EUR to ${state.customer}?` }) as { approvedBy: string };
      ran("approve", `approved by ${decision.approvedBy}`);
      return { approvedBy: decision.approvedBy };
    })
    .addNode("charge_card", (state: State, config: LangGraphRunnableConfig) => {
      ran("charge_card");
      // Same task → same key, however often the node runs: the ledger's unique key ignores a repeat.
      const key = idempotencyKey(config, "charge");
      const charged = ledger.charge(key, state.orderId, -state.amount, hooks.worker);
      hooks.afterCharge?.();
      return { receipt: charged ? `refund of ${state.amount} EUR, key ${key.slice(0, 12)}…` : `already refunded (key ${key.slice(0, 12)}…)` };
    })
    .addNode("email", (state: State) => {
      ran("email");
      return { emailed: state.receipt !== "" };
    })
    .addEdge(START, "lookup")
    .addEdge("lookup", "check_policy")
    .addConditionalEdges("check_policy", (state: State) => (state.eligible ? "approve" : END), ["approve", END])
    .addEdge("approve", "charge_card")
    .addEdge("charge_card", "email")
    .addEdge("email", END)
    .compile({ checkpointer });
}
