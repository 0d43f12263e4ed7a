/**
 * `pnpm --filter @resumable/example-review-queue demo`: five refunds, each waiting for a person.
 * Four are started by the application and stop at their approval interrupt; the fifth was accepted
 * but its process died before running it, so a recovery runner finds it (pending) and runs it up to
 * its interrupt. The review queue then lists what waits, a reviewer answers four of them with
 * `Command({ resume })`, and `resumable-recovery list` shows the one left.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { RecoveryRunner } from "@resumable/recovery";
import { main as recoveryCli } from "@resumable/recovery/cli";
import { SqliteSaver } from "@resumable/sqlite";

import { refundGraph, type Decision, type ReviewRequest } from "./refund-graph.js";
import { answer, pendingReviews } from "./review-queue.js";

const dir = mkdtempSync(join(tmpdir(), "review-queue-"));
const file = join(dir, "refunds.sqlite");
const charges = new Map<string, string>();
const emails = new Map<string, string>();
const effects = {
  charge: (key: string, orderId: string, amount: number) => void (charges.has(key) || charges.set(key, `${orderId}: ${amount} EUR`)),
  email: (key: string, customer: string, text: string) => void (emails.has(key) || emails.set(key, `${customer}: ${text}`)),
};

const saver = await SqliteSaver.connect(file);
const graph = refundGraph(effects).compile({ checkpointer: saver });
const orders = [
  ["A-1001", "Ana"],
  ["A-1002", "Bo"],
  ["A-1003", "Chen"],
  ["A-1004", "Dara"],
] as const;
try {
  console.log(`Refunds on ${file}`);
  for (const [orderId, customer] of orders) {
    await graph.invoke({ orderId, customer }, { configurable: { thread_id: `refund-${orderId}` } });
  }
  // Accepted, then its process died before running it: only its input is on disk.
  await graph.updateState({ configurable: { thread_id: "refund-A-1005" } }, { orderId: "A-1005", customer: "Eli" }, "__start__");
  console.log(`  the application started ${orders.length} refunds; refund-A-1005 was accepted but never ran (its process died)`);

  const runner = new RecoveryRunner({ graph, saver, idleMs: 0 });
  const pass = await runner.runOnce();
  console.log(`  recovery runner: ${Object.entries(pass.outcomes).map(([t, o]) => `${t} → ${o}`).join(", ")}`);

  const queue = await pendingReviews<ReviewRequest>(saver);
  console.log(`\nReview queue (${queue.length} waiting):`);
  for (const item of queue) console.log(`  ${item.threadId}: ${item.request.question}`);

  const decisions: Record<string, Decision> = {
    "refund-A-1001": { approved: true, reviewer: "Marta" },
    "refund-A-1002": { approved: true, reviewer: "Marta" },
    "refund-A-1003": { approved: false, reviewer: "Marta", note: "over the 200 EUR a reviewer may approve alone" },
    "refund-A-1005": { approved: true, reviewer: "Marta" },
  };
  console.log(`\nMarta answers four of them:`);
  for (const [threadId, decision] of Object.entries(decisions)) {
    const result = await answer(saver, graph, threadId, decision, decision.reviewer);
    const state = await graph.getState({ configurable: { thread_id: threadId } });
    console.log(`  ${threadId}: ${decision.approved ? "approved" : "rejected"} (${result}); ${state.values.receipt || "no charge"}; e-mail: "${state.values.emailed}"`);
  }
  const again = await answer(saver, graph, "refund-A-1001", { approved: true, reviewer: "Sam" }, "Sam");
  console.log(`  a second answer to refund-A-1001 (Sam, a moment later): ${again}`);
  console.log(`\ncards charged: ${charges.size} (${[...charges.values()].join("; ")}); e-mails sent: ${emails.size}`);

  console.log(`\n$ resumable-recovery list --db ${file}`);
  await saver.close();
  await recoveryCli(["list", "--db", file]);
} finally {
  await saver.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
