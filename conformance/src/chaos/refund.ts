/**
 * The refund agent the chaos test runs: `lookup → check_policy → approve → charge_card → email`, the
 * graph of `examples/refund`, with side effects in a ledger that several processes share (files
 * created atomically under their idempotency key, so a second charge under one key charges nothing).
 * A thread whose order is `POISON` fails in `check_policy` every time.
 *
 * @module
 */
import { appendFileSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { Annotation, END, START, StateGraph, interrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { idempotencyKey } from "@resumable/core";

/** The order id of the thread that fails deterministically. */
export const POISON_ORDER = "POISON";
/** The message the poison thread fails with. */
export const POISON_MESSAGE = "the policy service rejects order POISON (a poison thread: it fails the same way every time)";

/** The refund thread's state: the order, then what each step found or did. */
export const ChaosRefundState = Annotation.Root({
  orderId: Annotation<string>(),
  customer: Annotation<string>(),
  amount: Annotation<number>({ reducer: (_a, b) => b, default: () => 0 }),
  eligible: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
  approvedBy: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
  receipt: Annotation<string>({ reducer: (_a, b) => b, default: () => "" }),
  emailed: Annotation<boolean>({ reducer: (_a, b) => b, default: () => false }),
});
type State = typeof ChaosRefundState.State;

/** What one side effect wrote: one file per idempotency key. */
interface EffectRecord {
  threadId: string;
  orderId: string;
  pid: number;
}

/**
 * Side effects shared by every worker process: `charges/<key>` and `emails/<key>` are created
 * atomically (written to a temporary file, then hard-linked, which fails when the key exists), and
 * every call is appended to `charge-calls.log` / `email-calls.log` (what the card would have seen
 * without the key).
 */
export class ChaosLedger {
  constructor(readonly dir: string) {
    for (const sub of ["charges", "emails", "tmp"]) mkdirSync(join(dir, sub), { recursive: true });
  }

  /** Records the effect once per key; returns whether this call did it. */
  private once(kind: "charges" | "emails", key: string, record: EffectRecord): boolean {
    appendFileSync(join(this.dir, kind === "charges" ? "charge-calls.log" : "email-calls.log"), `${JSON.stringify({ key, ...record })}\n`);
    const tmp = join(this.dir, "tmp", `${key}.${process.pid}.${Math.random().toString(36).slice(2)}`);
    writeFileSync(tmp, JSON.stringify(record));
    try {
      linkSync(tmp, join(this.dir, kind, key));
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === "EEXIST") return false;
      throw error;
    } finally {
      rmSync(tmp, { force: true });
    }
  }

  /** Charges the card once per idempotency key; returns whether this call charged it. */
  charge(key: string, record: EffectRecord): boolean {
    return this.once("charges", key, record);
  }

  /** Sends the e-mail once per idempotency key; returns whether this call sent it. */
  email(key: string, record: EffectRecord): boolean {
    return this.once("emails", key, record);
  }

  /** Effects per thread id, and how many calls were made. */
  tally(): { charges: Map<string, number>; emails: Map<string, number>; chargeCalls: number; emailCalls: number } {
    const count = (kind: "charges" | "emails") => {
      const out = new Map<string, number>();
      for (const file of readdirSync(join(this.dir, kind))) {
        const record = JSON.parse(readFileSync(join(this.dir, kind, file), "utf8")) as EffectRecord;
        out.set(record.threadId, (out.get(record.threadId) ?? 0) + 1);
      }
      return out;
    };
    const lines = (file: string) => {
      try {
        return readFileSync(join(this.dir, file), "utf8").split("\n").filter(Boolean).length;
      } catch {
        return 0;
      }
    };
    return { charges: count("charges"), emails: count("emails"), chargeCalls: lines("charge-calls.log"), emailCalls: lines("email-calls.log") };
  }

  /** How many threads have sent their e-mail (the last step): the parent's progress gauge. */
  emailsSent(): number {
    return readdirSync(join(this.dir, "emails")).length;
  }
}

const pause = (minMs: number, maxMs: number) => new Promise((resolve) => setTimeout(resolve, minMs + Math.random() * (maxMs - minMs)));

/** The refund graph over a ledger; compile it without a checkpointer (the runner lends its leased saver). */
export function chaosRefundGraph(ledger: ChaosLedger) {
  const threadOf = (config: LangGraphRunnableConfig) => String(config.configurable?.["thread_id"]);
  return new StateGraph(ChaosRefundState)
    .addNode("lookup", async (state: State) => {
      await pause(2, 15);
      return { amount: 10 + (Number.parseInt(state.orderId.replace(/\D/g, "") || "7", 10) % 90) };
    })
    .addNode("check_policy", async (state: State) => {
      await pause(2, 15);
      if (state.orderId === POISON_ORDER) throw new Error(POISON_MESSAGE);
      return { eligible: state.amount <= 100 };
    })
    .addNode("approve", (state: State) => {
      const decision = interrupt<{ question: string }, { approvedBy: string }>({ question: `Refund ${state.amount} EUR to ${state.customer}?` });
      return { approvedBy: decision.approvedBy };
    })
    .addNode("charge_card", async (state: State, config: LangGraphRunnableConfig) => {
      await pause(2, 15);
      const charged = ledger.charge(idempotencyKey(config, "charge"), { threadId: threadOf(config), orderId: state.orderId, pid: process.pid });
      // A kill may land between the charge and the node's return: the next attempt charges nothing.
      await pause(2, 15);
      return { receipt: charged ? `refunded ${state.amount} EUR` : `already refunded` };
    })
    .addNode("email", async (state: State, config: LangGraphRunnableConfig) => {
      await pause(2, 10);
      ledger.email(idempotencyKey(config, "email"), { threadId: threadOf(config), orderId: state.orderId, pid: process.pid });
      return { emailed: true };
    })
    .addEdge(START, "lookup")
    .addEdge("lookup", "check_policy")
    .addConditionalEdges("check_policy", (state: State) => (state.eligible ? "approve" : END), ["approve", END])
    .addEdge("approve", "charge_card")
    .addEdge("charge_card", "email")
    .addEdge("email", END);
}
