/**
 * The refund agent of `examples/refund` (lookup → check_policy → approve → charge_card → email),
 * trimmed for the review queue: `approve` asks a person through `interrupt()` and reads the answer
 * `Command({ resume })` gives it; a rejected refund ends without charging.
 *
 * @module
 */
import { Annotation, END, START, StateGraph, interrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { idempotencyKey } from "@resumable/core";

export const RefundState = Annotation.Root({
  orderId: Annotation<string>(),
  customer: Annotation<string>(),
  amount: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  eligible: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
  decision: Annotation<Decision | null>({ reducer: (_a, b) => b, default: () => null }),
  receipt: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
  emailed: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
});
export type RefundState = typeof RefundState.State;

/** What a reviewer answers. */
export interface Decision {
  approved: boolean;
  reviewer: string;
  note?: string;
}

/** What the question a reviewer sees carries (the `interrupt()` value). */
export interface ReviewRequest {
  question: string;
  orderId: string;
  customer: string;
  amount: number;
}

/** Where charges and e-mails go; the demo keeps them in memory, keyed by idempotency key. */
export interface Effects {
  charge(key: string, orderId: string, amount: number): void;
  email(key: string, customer: string, text: string): void;
}

const PRICES: Record<string, number> = { "A-1001": 42, "A-1002": 18, "A-1003": 240, "A-1004": 9, "A-1005": 75 };

/** The refund graph; compile it with a checkpointer (or let the runner lend its leased saver). */
export function refundGraph(effects: Effects) {
  return new StateGraph(RefundState)
    .addNode("lookup", (s: RefundState) => ({ amount: PRICES[s.orderId] ?? 10 }))
    .addNode("check_policy", (s: RefundState) => ({ eligible: s.amount <= 500 }))
    .addNode("approve", (s: RefundState) => {
      const request: ReviewRequest = { question: `Refund ${s.amount} EUR to ${s.customer}?`, orderId: s.orderId, customer: s.customer, amount: s.amount };
      return { decision: interrupt<ReviewRequest, Decision>(request) };
    })
    .addNode("charge_card", (s: RefundState, config: LangGraphRunnableConfig) => {
      const key = idempotencyKey(config, "charge");
      effects.charge(key, s.orderId, s.amount);
      return { receipt: `refund of ${s.amount} EUR (key ${key.slice(0, 8)})` };
    })
    .addNode("email", (s: RefundState, config: LangGraphRunnableConfig) => {
      const text = s.decision?.approved ? `Your refund of ${s.amount} EUR is on its way.` : `We could not refund order ${s.orderId}: ${s.decision?.note ?? "declined"}.`;
      effects.email(idempotencyKey(config, "email"), s.customer, text);
      return { emailed: text };
    })
    .addEdge(START, "lookup")
    .addEdge("lookup", "check_policy")
    .addConditionalEdges("check_policy", (s: RefundState) => (s.eligible ? "approve" : END), ["approve", END])
    .addConditionalEdges("approve", (s: RefundState) => (s.decision?.approved ? "charge_card" : "email"), ["charge_card", "email"])
    .addEdge("charge_card", "email")
    .addEdge("email", END);
}
