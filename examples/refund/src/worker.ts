/**
 * One worker process of the demo. `--step start` runs the refund until the approval interrupt, gives
 * the approval and (with `--kill-in-charge`) is killed with SIGKILL inside charge_card. `--step resume`
 * is a new process that picks the thread up from whatever the first one left on disk.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { Command } from "@langchain/langgraph";
import { openBackend } from "./backends.js";
import { Ledger } from "./ledger.js";
import { buildRefundGraph } from "./refund-graph.js";

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "sqlite" },
    dir: { type: "string" },
    thread: { type: "string" },
    mode: { type: "string", default: "async" },
    worker: { type: "string", default: "1" },
    step: { type: "string", default: "start" },
    "kill-in-charge": { type: "boolean", default: false },
  },
});

const dir = values.dir!;
const worker = Number(values.worker);
const durability = values.mode as "exit" | "async" | "sync";
const config = { configurable: { thread_id: values.thread! }, durability };
const ORDER = { orderId: "A-1001", customer: "Ana" };

const ledger = new Ledger(join(dir, "payments.sqlite"));
const { saver } = await openBackend(values.backend!, dir);
const graph = buildRefundGraph(saver, ledger, {
  worker,
  afterCharge: values["kill-in-charge"]
    ? () => {
        // The card is charged, the node has not returned: the worst moment to die.
        process.kill(process.pid, "SIGKILL");
      }
    : undefined,
});

const pendingInterrupt = async () => (await graph.getState(config)).tasks.some((t) => (t.interrupts?.length ?? 0) > 0);

if (values.step === "start") {
  await graph.invoke(ORDER, config);
  if (await pendingInterrupt()) {
    ledger.recordRun(worker, "approve", "interrupt: waits for a human");
    // Ana's manager approves; the answer is recorded by the application, as any user input would be.
    ledger.recordApproval(ORDER.orderId, "Marta");
    await graph.invoke(new Command({ resume: { approvedBy: "Marta" } }), config);
  }
} else {
  for (let round = 0; round < 5; round++) {
    const state = await graph.getState(config);
    if (state.config?.configurable?.["checkpoint_id"] === undefined) {
      await graph.invoke(ORDER, config); // nothing on disk: the request starts over
    } else if (await pendingInterrupt()) {
      // "exit" durability: the approval given to worker 1 never reached the checkpointer; give it again.
      const approvedBy = ledger.approval(ORDER.orderId);
      if (approvedBy === undefined) break;
      await graph.invoke(new Command({ resume: { approvedBy } }), config);
    } else if (state.next.length > 0 || state.tasks.length > 0) {
      await graph.invoke(null, config);
    } else {
      break;
    }
  }
}
ledger.close();
await saver.close?.();
