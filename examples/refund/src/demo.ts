/**
 * `pnpm demo`: for each durability mode, worker 1 runs Ana's refund, the approval is given, worker 1
 * is killed with SIGKILL inside charge_card (after the charge, before the node returns), and worker 2,
 * a new process, resumes the thread. Prints what ran where, what was on disk at the kill, and how many
 * times the card was charged.
 *
 * Usage: `pnpm demo [--backend sqlite|postgres] [--mode exit|async|sync]`
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { BACKENDS, BackendUnavailableError, openBackend } from "./backends.js";
import { Ledger, type RunRow } from "./ledger.js";

const MODES = ["exit", "async", "sync"] as const;
type Mode = (typeof MODES)[number];

const { values } = parseArgs({
  options: {
    backend: { type: "string", default: "sqlite" },
    mode: { type: "string", multiple: true },
    keep: { type: "boolean", default: false },
  },
});
const backend = values.backend!;
const modes = (values.mode?.length ? values.mode : MODES) as Mode[];
for (const mode of modes) {
  if (!MODES.includes(mode)) {
    console.error(`Unknown --mode "${mode}"; use one of: ${MODES.join(", ")}.`);
    process.exit(2);
  }
}

const here = dirname(fileURLToPath(import.meta.url));
const workerScript = join(here, "worker.ts");

interface Exit {
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function runWorker(args: string[]): Promise<Exit> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", workerScript, ...args], {
      stdio: ["ignore", "inherit", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("exit", (code, signal) => resolve({ pid: child.pid ?? -1, code, signal, stderr }));
  });
}

function describeRuns(runs: RunRow[], worker: number): string {
  const nodes = runs.filter((r) => r.worker === worker).map((r) => (r.note ? `${r.node} (${r.note})` : r.node));
  return nodes.length > 0 ? nodes.join(" → ") : "nothing";
}

const times = (n: number) => `${n} time${n === 1 ? "" : "s"}`;

async function demo(mode: Mode): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), `refund-${mode}-`));
  const thread = `refund-A-1001-${mode}-${Date.now().toString(36)}`;
  const common = ["--backend", backend, "--dir", dir, "--thread", thread, "--mode", mode];
  try {
    console.log(`\n── durability "${mode}" ──────────────────────────────────────────`);
    const first = await runWorker([...common, "--worker", "1", "--step", "start", "--kill-in-charge"]);
    if (first.signal !== "SIGKILL") {
      console.log(`  worker 1 was expected to die inside charge_card but exited with ${first.signal ?? first.code}:\n${first.stderr}`);
      return false;
    }
    const { saver, where } = await openBackend(backend, dir);
    let onDisk = 0;
    for await (const _ of saver.list({ configurable: { thread_id: thread } })) onDisk++;
    await saver.close?.();

    const second = await runWorker([...common, "--worker", "2", "--step", "resume"]);
    if (second.code !== 0) {
      console.log(`  worker 2 failed (${second.signal ?? second.code}):\n${second.stderr}`);
      return false;
    }
    const ledger = new Ledger(join(dir, "payments.sqlite"));
    const runs = ledger.runs();
    const { charges, attempts } = ledger.counts();
    ledger.close();
    console.log(`  worker 1 (pid ${first.pid}): ${describeRuns(runs, 1)}  ✝ SIGKILL inside charge_card, after the charge`);
    console.log(`  checkpoints on disk at the kill: ${onDisk} (${where})`);
    console.log(`  worker 2 (pid ${second.pid}): ${describeRuns(runs, 2)}`);
    console.log(`  card charged ${times(charges)}; without the idempotency key it would have been charged ${times(attempts)}`);
    console.log(`  charged ${times(charges)}`);
    return charges === 1;
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
    else console.log(`  files kept in ${dir}`);
  }
}

try {
  // Fail early, with the backend's own explanation, before any worker starts.
  const probeDir = mkdtempSync(join(tmpdir(), "refund-probe-"));
  try {
    const { saver } = await openBackend(backend, probeDir);
    await saver.close?.();
  } finally {
    rmSync(probeDir, { recursive: true, force: true });
  }
} catch (error) {
  if (error instanceof BackendUnavailableError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}

console.log(`Ana's refund on ${backend} (backends: ${BACKENDS.join(", ")}): lookup → check_policy → approve → charge_card → email`);
let ok = true;
for (const mode of modes) ok = (await demo(mode)) && ok;
console.log(ok ? "\nEvery mode charged the card exactly once." : "\nSome mode did not charge the card exactly once.");
process.exit(ok ? 0 : 1);
