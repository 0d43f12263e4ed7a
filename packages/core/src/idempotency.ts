/**
 * Idempotency keys for side effects inside graph nodes.
 *
 * A checkpointer makes a graph resumable, not its side effects: when a process dies inside a node, the
 * node runs again on resume, and so does the card charge or the e-mail it sent. The usual cure is an
 * idempotency key that the external system (a payments API, a ledger table with a unique key) uses
 * to ignore the second attempt. {@link idempotencyKey} derives that key from what LangGraph passes to
 * every node, so that the same task gets the same key when it is re-executed after a crash or an
 * interrupt, and a later run gets a new one.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { MissingThreadIdError } from "./errors.js";

/** The part of LangGraph's runnable config that {@link idempotencyKey} reads. */
export interface IdempotencyConfig {
  configurable?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

/** Where the key came from, as returned by {@link idempotencyKeyParts}; handy for logs. */
export interface IdempotencyKeyParts {
  threadId: string;
  /** The namespace of the enclosing graph: `""` for the root, `"node:<task id>"` parts for subgraphs. */
  namespace: string;
  /** The superstep the task belongs to (`metadata.langgraph_step`). */
  step: number;
  /** The node name (`metadata.langgraph_node`). */
  node: string;
  /** The task's path, which tells apart the tasks of one step (`Send` targets, `task()` calls). */
  path: string;
  label: string;
}

// A task's own namespace segment is `name:<task id>`; task ids are uuid5s of the checkpoint id,
// which "exit" durability regenerates when a run starts over, so the segment is replaced by
// step + node + path below.
const TASK_ID_SUFFIX = /:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The inputs of {@link idempotencyKey}, without hashing them.
 *
 * @throws {MissingThreadIdError} when the config has no `configurable.thread_id`.
 * @throws {TypeError} when the config is not a node's config (no `langgraph_step`/`langgraph_node`).
 */
export function idempotencyKeyParts(config: IdempotencyConfig | undefined, label = ""): IdempotencyKeyParts {
  const configurable = config?.configurable ?? {};
  const metadata = config?.metadata ?? {};
  const threadId = configurable["thread_id"];
  if (threadId === undefined || threadId === null || threadId === "") {
    throw new MissingThreadIdError("idempotencyKey");
  }
  const step = metadata["langgraph_step"];
  const node = metadata["langgraph_node"];
  if (typeof step !== "number" || typeof node !== "string") {
    throw new TypeError(
      "idempotencyKey: the config is not the config of a running graph node (no metadata.langgraph_step / " +
        "langgraph_node). Pass the second argument LangGraph gives the node: `async (state, config) => ...`.",
    );
  }
  const taskNs = typeof configurable["checkpoint_ns"] === "string" ? configurable["checkpoint_ns"] : "";
  const segments = taskNs === "" ? [] : taskNs.split("|");
  const own = segments.pop();
  // Outside a task (unlikely, but cheap to handle) the whole namespace is the enclosing graph's.
  const namespace =
    own !== undefined && own.replace(TASK_ID_SUFFIX, "") === node ? segments.join("|") : taskNs;
  const rawPath = metadata["langgraph_path"];
  const path = rawPath === undefined ? "" : JSON.stringify(rawPath);
  return { threadId: String(threadId), namespace, step, node, path, label };
}

/**
 * A key for one side effect of the running task, to hand to the system that performs it (a payments
 * API's `Idempotency-Key`, a unique column of a ledger table).
 *
 * The key is a SHA-256 (hex) of the thread id, the enclosing graph's namespace, the superstep, the
 * node name, the task path (which tells apart parallel `Send` tasks of one node) and `label`:
 *
 * - **stable** when the same task runs again: after a crash and `invoke(null, config)`, after an
 *   `interrupt()` is resumed, and in `"exit"` durability where the whole run starts over (so it does
 *   not use LangGraph's task id, which changes when the checkpoint it was derived from was never
 *   saved);
 * - **different** for a later run on the same thread (its supersteps continue from the last
 *   checkpoint), for another thread, another node, another `Send` task, or another `label`.
 *
 * Use `label` when one node performs several side effects (`"charge"`, `"email"`).
 *
 * Limits: inside a subgraph the namespace carries the parent's task id, so in `"exit"` durability a
 * subgraph node that is re-run because the parent step started over gets a new key. Replaying a thread
 * from an earlier checkpoint (time travel) re-executes the same supersteps and therefore reuses their
 * keys: a replay does not repeat a side effect. To force a new one, add a label (e.g. a fork id).
 *
 * @param config The config LangGraph passes to the node (its second argument).
 * @param label Distinguishes several side effects of one task. Default `""`.
 * @throws {MissingThreadIdError} when the config has no `configurable.thread_id`.
 *
 * @example Charge a card once, however often the node runs:
 * ```ts
 * const chargeCard = async (state: typeof State.State, config: LangGraphRunnableConfig) => {
 *   const key = idempotencyKey(config, "charge");
 *   // INSERT OR IGNORE into a ledger with UNIQUE(idempotency_key): a re-run inserts nothing.
 *   ledger.prepare("INSERT OR IGNORE INTO payments (idempotency_key, amount) VALUES (?, ?)").run(key, state.amount);
 *   return { charged: true };
 * };
 * ```
 */
export function idempotencyKey(config: IdempotencyConfig | undefined, label = ""): string {
  const parts = idempotencyKeyParts(config, label);
  return createHash("sha256")
    .update(JSON.stringify([parts.threadId, parts.namespace, parts.step, parts.node, parts.path, parts.label]))
    .digest("hex");
}
