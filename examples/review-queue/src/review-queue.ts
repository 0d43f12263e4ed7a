/**
 * The review queue: threads waiting on `interrupt()` are found through the thread-status index
 * (`listThreads({ status: "interrupted" })`, never a scan), shown with the question they ask, and
 * answered with `Command({ resume })` by a person, under a lease, so that no recovery runner or second
 * reviewer touches the thread while the answer is applied.
 *
 * @module
 */
import { Command } from "@langchain/langgraph";
import type { ResumableSaver } from "@resumable/core";
import { leasedGraph, type RecoverableGraph } from "@resumable/recovery";

/** One item of the queue. */
export interface Review<Q = unknown> {
  threadId: string;
  /** What `interrupt()` was given: the question for the reviewer. */
  request: Q;
  /** How long it has waited, in ms. */
  waitingMs: number;
}

/** The threads waiting for a person, longest waiting first. */
export async function pendingReviews<Q = unknown>(saver: ResumableSaver, limit = 50): Promise<Review<Q>[]> {
  const page = await saver.listThreads({ status: "interrupted", limit });
  const now = Date.now();
  return page.threads.map((t) => ({ threadId: t.threadId, request: t.interrupts[0]?.value as Q, waitingMs: now - t.updatedAt }));
}

/** What {@link answer} did. */
export type AnswerResult = "answered" | "taken" | "not-waiting";

/**
 * Answers one thread's interrupt with `Command({ resume: decision })` and runs the thread on until it
 * ends or asks again. `"taken"`: another worker holds the thread; `"not-waiting"`: someone answered it
 * already.
 */
export async function answer(saver: ResumableSaver, graph: RecoverableGraph, threadId: string, decision: unknown, reviewer: string): Promise<AnswerResult> {
  const lease = await saver.claimLease(threadId, { workerId: `reviewer:${reviewer}`, ttlMs: 60_000 });
  if (!lease) return "taken";
  try {
    // Checked under the lease: the answer is applied exactly once.
    const status = await saver.getThreadStatus(threadId);
    if (status?.state !== "interrupted") return "not-waiting";
    await leasedGraph(graph, saver.withLease(lease)).invoke(new Command({ resume: decision }), { configurable: { thread_id: threadId } });
    return "answered";
  } finally {
    await saver.releaseLease(lease);
  }
}
