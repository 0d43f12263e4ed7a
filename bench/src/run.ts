/**
 * Runs a benchmark: picks the backends, finds servers, runs every measurement with progress, and
 * checks the figures against the issue's targets (reported, never asserted).
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { allBackends, type BackendSpec, type BenchContext } from "./backends.js";
import type { BenchConfig } from "./config.js";
import { STATE_LABEL } from "./graphs.js";
import { machineInfo } from "./machine.js";
import { findBenchPostgres } from "./postgres-server.js";
import type { BackendResult, BenchResults, TargetCheck } from "./results.js";
import { readTogether, runGrowth, runLatency, runOps, type HeldThread, type Progress } from "./scenarios.js";

/** Receives progress: the phase, the backend and what is running. */
export type ProgressListener = (event: { phase: string; backend: string; detail: string; step: number; steps: number }) => void;

function selected(spec: BackendSpec, backends: BenchConfig["backends"]): boolean {
  if (backends === "all") return true;
  if (backends === "embedded") return spec.embedded;
  return backends.includes(spec.id) || backends.includes(spec.database);
}

function formatRatio(value: number): string {
  return `${value.toFixed(2)}×`;
}

/**
 * LangChain's saver on the same database and settings, for each of ours: `timing` for latency and
 * operations (durability settings equal), `storage` for bytes and reads (settings do not matter).
 */
const PEERS: Record<string, { timing?: string; storage?: string }> = {
  "resumable-memory": { timing: "langchain-memory", storage: "langchain-memory" },
  "resumable-sqlite": { timing: "langchain-sqlite-full", storage: "langchain-sqlite" },
  "resumable-sqlite-normal": { timing: "langchain-sqlite" },
  "resumable-postgres": { timing: "langchain-postgres", storage: "langchain-postgres" },
  "resumable-mongodb": { timing: "langchain-mongodb", storage: "langchain-mongodb" },
};

/** Compares measured figures with the targets of the storage and speed issues (reported, never asserted). */
export function checkTargets(results: Omit<BenchResults, "targets">): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const ran = new Set(results.backends.filter((b) => b.status === "ran").map((b) => b.id));
  for (const backend of results.backends.filter((b) => b.status === "ran" && b.owner === "resumable")) {
    const peers = PEERS[backend.id] ?? {};
    const storagePeer = peers.storage && ran.has(peers.storage) ? peers.storage : undefined;
    const timingPeer = peers.timing && ran.has(peers.timing) ? peers.timing : undefined;
    // Storage: plain reducer at every reported length; DeltaChannel kinds at the longest thread.
    for (const g of results.growth.filter((p) => p.backend === backend.id && p.state === "plain" && !p.estimated)) {
      const logical = g.logicalBytes / g.rawBytes;
      const physical = g.physicalBytes === null ? null : g.physicalBytes / g.rawBytes;
      // On disk, judged on what the thread adds: the empty schema is a fixed cost of the database.
      const net = g.physicalBytes === null ? null : (g.physicalBytes - (g.emptyPhysicalBytes ?? 0)) / g.rawBytes;
      checks.push({
        target: `plain reducer, ${g.turns} turns: ≤ 1.5× raw logical${physical === null ? "" : ", ≤ 2× on disk (net of the empty schema)"}`,
        backend: backend.id,
        measured:
          `${formatRatio(logical)}` +
          (physical === null || net === null
            ? ""
            : ` (on disk ${formatRatio(net)} net, ${formatRatio(physical)} with the empty schema` +
              (g.nextThreadPhysicalBytes === undefined ? "" : `; a further thread ${formatRatio(g.nextThreadPhysicalBytes / g.rawBytes)}`) +
              ")"),
        met: logical <= 1.5 && (net === null || net <= 2),
      });
    }
    for (const state of ["delta", "delta-nosnap"] as const) {
      const points = results.growth.filter((g) => g.backend === backend.id && g.state === state && !g.estimated);
      const last = points[points.length - 1];
      if (!last) continue;
      const logical = last.logicalBytes / last.rawBytes;
      const peer = storagePeer ? results.growth.find((g) => g.backend === storagePeer && g.state === state && g.turns === last.turns && !g.estimated) : undefined;
      checks.push({
        target: `${STATE_LABEL[state]}, ${last.turns} turns: ≤ 1.5× raw${storagePeer ? " and smaller than LangChain's" : ""}`,
        backend: backend.id,
        measured: `${formatRatio(logical)}${peer ? ` (LangChain ${formatRatio(peer.logicalBytes / peer.rawBytes)})` : storagePeer ? " (LangChain did not reach this length)" : ""}`,
        met: logical <= 1.5 && (!peer || last.logicalBytes < peer.logicalBytes),
      });
    }
    // getState on the longest thread of each kind: round trips, and no slower than LangChain's.
    for (const state of ["plain", "delta", "delta-nosnap"] as const) {
      const reads = results.reads.filter((r) => r.backend === backend.id && r.state === state);
      const deepest = reads[reads.length - 1];
      if (!deepest) continue;
      const peer = storagePeer ? results.reads.find((r) => r.backend === storagePeer && r.state === state && r.depth === deepest.depth) : undefined;
      const fewTrips = deepest.roundTrips === null || backend.database !== "postgres" || deepest.roundTrips <= 2;
      checks.push({
        target: `getState, ${deepest.depth}-turn ${STATE_LABEL[state]} thread: ${backend.database === "postgres" ? "≤ 2 round trips, " : ""}no slower than LangChain's`,
        backend: backend.id,
        measured:
          `${deepest.latencyMs.median.toFixed(1)} ms, ${deepest.roundTrips ?? "—"} round trips` +
          (peer ? ` (LangChain ${peer.latencyMs.median.toFixed(1)} ms, ${peer.roundTrips ?? "—"})` : ""),
        met: fewTrips && (!peer || deepest.latencyMs.median <= peer.latencyMs.median),
      });
    }
    // Direct calls at equal settings.
    if (timingPeer) {
      for (const op of ["put", "putWrites", "getTuple"] as const) {
        const ours = results.ops.find((o) => o.backend === backend.id && o.op === op);
        const theirs = results.ops.find((o) => o.backend === timingPeer && o.op === op);
        if (!ours || !theirs) continue;
        checks.push({
          target: `${op} / s at least LangChain's (${timingPeer})`,
          backend: backend.id,
          measured: `${ours.perSecond.median.toFixed(0)} vs ${theirs.perSecond.median.toFixed(0)} (${formatRatio(ours.perSecond.median / theirs.perSecond.median)})`,
          met: ours.perSecond.median >= theirs.perSecond.median,
        });
      }
    }
    // Step latency: the saver's share no more than LangChain's; async no slower than sync; PostgreSQL ≤ 3 committed inserts.
    for (const point of results.latency.filter((l) => l.backend === backend.id && l.durability !== "exit")) {
      const kb = point.stateBytes / 1024;
      const peer = timingPeer
        ? results.latency.find((l) => l.backend === timingPeer && l.stateBytes === point.stateBytes && l.durability === point.durability)
        : undefined;
      if (peer) {
        checks.push({
          target: `saver's share per step, ${point.durability}, ${kb} KB: no more than LangChain's (${timingPeer})`,
          backend: backend.id,
          measured: `${point.saverShareMs.median.toFixed(2)} ms vs ${peer.saverShareMs.median.toFixed(2)} ms`,
          met: point.saverShareMs.median <= peer.saverShareMs.median,
        });
      }
      if (backend.database === "postgres" && point.shareOverWriteFloor) {
        checks.push({
          target: `saver's share per step, ${point.durability}, ${kb} KB: ≤ 3× one committed insert`,
          backend: backend.id,
          measured: formatRatio(point.shareOverWriteFloor.median),
          met: point.shareOverWriteFloor.median <= 3,
        });
      }
    }
    for (const kb of [...new Set(results.latency.filter((l) => l.backend === backend.id).map((l) => l.stateBytes))]) {
      const sync = results.latency.find((l) => l.backend === backend.id && l.stateBytes === kb && l.durability === "sync");
      const async = results.latency.find((l) => l.backend === backend.id && l.stateBytes === kb && l.durability === "async");
      if (!sync || !async) continue;
      checks.push({
        target: `async no slower than sync, ${kb / 1024} KB state`,
        backend: backend.id,
        measured: `${async.perStepMs.median.toFixed(2)} ms vs ${sync.perStepMs.median.toFixed(2)} ms per step`,
        met: async.perStepMs.median <= sync.perStepMs.median,
      });
    }
  }
  return checks;
}

/** Runs every measurement of `config`. `workDir` holds the SQLite files (a fresh temp dir by default). */
export async function runBenchmark(config: BenchConfig, options: { onProgress?: ProgressListener; workDir?: string } = {}): Promise<BenchResults> {
  const startedAt = new Date().toISOString();
  const workDir = options.workDir ?? mkdtempSync(join(tmpdir(), "resumable-bench-"));
  const ctx: BenchContext = { workDir };
  const specs = allBackends();
  const backendResults: BackendResult[] = [];
  const errors: string[] = [];
  const runnable: BackendSpec[] = [];
  try {
    const wanted = specs.filter((spec) => selected(spec, config.backends));
    if (wanted.some((spec) => spec.database === "postgres")) {
      try {
        ctx.postgres = await findBenchPostgres();
      } catch (error) {
        errors.push(`PostgreSQL: ${(error as Error).message.split("\n")[0]}`);
      }
    }
    for (const spec of specs) {
      const base = { id: spec.id, label: spec.label, owner: spec.owner, database: spec.database, notes: spec.notes };
      if (!selected(spec, config.backends)) {
        backendResults.push({ ...base, status: "not selected", reason: spec.embedded ? "" : "needs a server: run with --backends all" });
        continue;
      }
      const reason = await spec.unavailable(ctx);
      if (reason) {
        backendResults.push({ ...base, status: "unavailable", reason });
        continue;
      }
      backendResults.push({ ...base, status: "ran" });
      runnable.push(spec);
    }

    const phases = [
      { name: "growth (plain reducer)", kind: "growth", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "plain", p) },
      { name: "growth + reads (DeltaChannel)", kind: "growth", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "delta", p) },
      { name: "growth + reads (DeltaChannel, no snapshot)", kind: "growth", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "delta-nosnap", p) },
      { name: "step latency", kind: "latency", run: (spec: BackendSpec, p: Progress) => runLatency(spec, ctx, config, p) },
    ] as const;
    const results: Omit<BenchResults, "targets" | "finishedAt"> = {
      name: config.name,
      startedAt,
      config,
      machine: machineInfo(),
      backends: backendResults,
      growth: [],
      prune: [],
      reads: [],
      latency: [],
      ops: [],
      notes: [],
      errors,
    };
    const takesPart = (spec: BackendSpec, kind: "growth" | "latency" | "ops") =>
      (!config.phases || config.phases.includes(kind)) && (!spec.phases || spec.phases.includes(kind));
    const steps =
      phases.reduce((n, phase) => n + runnable.filter((spec) => takesPart(spec, phase.kind)).length, 0) +
      runnable.filter((spec) => takesPart(spec, "ops")).length;
    let step = 0;
    for (const phase of phases) {
      const held: HeldThread[] = [];
      for (const spec of runnable) {
        if (!takesPart(spec, phase.kind)) continue;
        step += 1;
        const progress: Progress = (detail) => options.onProgress?.({ phase: phase.name, backend: spec.label, detail, step, steps });
        progress("starting");
        try {
          const out = await phase.run(spec, progress);
          if (Array.isArray(out)) {
            results.latency.push(...out);
          } else {
            results.growth.push(...out.growth);
            results.prune?.push(...out.prune);
            results.reads.push(...out.reads);
            results.notes.push(...out.notes);
            if (out.held) held.push(out.held);
          }
        } catch (error) {
          const message = `${phase.name} on ${spec.label}: ${(error as Error).stack ?? String(error)}`;
          errors.push(message);
          const entry = backendResults.find((b) => b.id === spec.id)!;
          entry.status = "failed";
          entry.reason = (error as Error).message.split("\n")[0];
        }
      }
      // getState at the threads' full length: every saver's thread of this kind in turn (see readTogether).
      if (held.length > 0) {
        const together = await readTogether(held, config.readReps, (detail) =>
          options.onProgress?.({ phase: phase.name, backend: held.map((h) => h.backend).join(", "), detail, step, steps }),
        );
        results.reads.push(...together.reads);
        results.prune?.push(...together.prune);
        errors.push(...together.errors);
      }
    }
    // The direct calls of every backend run together, taking turns (see runOps).
    const opsSpecs = runnable.filter((spec) => takesPart(spec, "ops"));
    if (opsSpecs.length > 0) {
      const first = step + 1;
      step += opsSpecs.length;
      const outcome = await runOps(opsSpecs, ctx, config, (spec, detail) =>
        options.onProgress?.({ phase: "operations", backend: spec.label, detail, step: first + opsSpecs.indexOf(spec), steps }),
      );
      results.ops.push(...outcome.points);
      for (const { spec, error } of outcome.failures) {
        errors.push(`operations on ${spec.label}: ${(error as Error).stack ?? String(error)}`);
        const entry = backendResults.find((b) => b.id === spec.id)!;
        entry.status = "failed";
        entry.reason = (error as Error).message.split("\n")[0];
      }
    }
    if (ctx.postgres) {
      const note = backendResults.find((b) => b.database === "postgres" && b.notes.length > 0)?.notes[0];
      if (note) results.machine.postgres = note;
    }
    // The machine is shared: the load at both ends tells how much the figures may have been disturbed.
    results.machine.loadAverageAtEnd = loadavg().map((l) => l.toFixed(2)).join(" ");
    const finished = { ...results, finishedAt: new Date().toISOString() };
    return { ...finished, targets: checkTargets(finished) };
  } finally {
    await ctx.postgres?.stop().catch(() => {});
    if (!options.workDir) rmSync(workDir, { recursive: true, force: true });
  }
}
