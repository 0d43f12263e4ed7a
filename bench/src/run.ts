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
import { runGrowth, runLatency, runOps, type Progress } from "./scenarios.js";

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

/** Compares measured figures with the three targets of the issue. */
export function checkTargets(results: Omit<BenchResults, "targets">): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const backend of results.backends.filter((b) => b.status === "ran")) {
    for (const state of ["delta", "delta-nosnap"] as const) {
      const delta = results.growth.filter((g) => g.backend === backend.id && g.state === state && !g.estimated);
      const last = delta[delta.length - 1];
      if (!last) continue;
      const logical = last.logicalBytes / last.rawBytes;
      const physical = last.physicalBytes === null ? null : last.physicalBytes / last.rawBytes;
      checks.push({
        target: `${STATE_LABEL[state]} growth ≤ 1.2× raw, ${last.turns} turns`,
        backend: backend.id,
        measured: `${formatRatio(logical)}${physical === null ? "" : ` (${formatRatio(physical)} on disk)`}`,
        met: logical <= 1.2,
      });
    }
    for (const point of results.latency.filter((l) => l.backend === backend.id && l.durability === "sync")) {
      const kb = point.stateBytes / 1024;
      checks.push({
        target: `sync per-step cost ≤ 1.5× DB floor, ${kb} KB state (× committed insert)`,
        backend: backend.id,
        measured: point.shareOverFloor
          ? `${formatRatio(point.shareOverFloor.median)} (${formatRatio(point.shareOverWriteFloor!.median)})`
          : "no floor (in memory)",
        met: point.shareOverFloor ? point.shareOverFloor.median <= 1.5 : null,
      });
    }
    for (const state of ["delta", "delta-nosnap"] as const) {
      const reads = results.reads.filter((r) => r.backend === backend.id && r.state === state);
      const deepest = reads[reads.length - 1];
      if (!deepest) continue;
      checks.push({
        target: `getState round trips ≤ 3, ${deepest.depth}-turn ${STATE_LABEL[state]} thread`,
        backend: backend.id,
        measured: deepest.roundTrips === null ? "no database" : `${deepest.roundTrips}`,
        met: deepest.roundTrips === null ? null : deepest.roundTrips <= 3,
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
      { name: "growth (plain reducer)", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "plain", p) },
      { name: "growth + reads (DeltaChannel)", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "delta", p) },
      { name: "growth + reads (DeltaChannel, no snapshot)", run: (spec: BackendSpec, p: Progress) => runGrowth(spec, ctx, config, "delta-nosnap", p) },
      { name: "step latency", run: (spec: BackendSpec, p: Progress) => runLatency(spec, ctx, config, p) },
      { name: "operations", run: (spec: BackendSpec, p: Progress) => runOps(spec, ctx, config, p) },
    ] as const;
    const results: Omit<BenchResults, "targets" | "finishedAt"> = {
      name: config.name,
      startedAt,
      config,
      machine: machineInfo(),
      backends: backendResults,
      growth: [],
      reads: [],
      latency: [],
      ops: [],
      notes: [],
      errors,
    };
    const steps = phases.length * runnable.length;
    let step = 0;
    for (const phase of phases) {
      for (const spec of runnable) {
        step += 1;
        const progress: Progress = (detail) => options.onProgress?.({ phase: phase.name, backend: spec.label, detail, step, steps });
        progress("starting");
        try {
          const out = await phase.run(spec, progress);
          if (Array.isArray(out)) {
            for (const point of out) {
              if ("op" in point) results.ops.push(point);
              else results.latency.push(point);
            }
          } else {
            results.growth.push(...out.growth);
            results.reads.push(...out.reads);
            results.notes.push(...out.notes);
          }
        } catch (error) {
          const message = `${phase.name} on ${spec.label}: ${(error as Error).stack ?? String(error)}`;
          errors.push(message);
          const entry = backendResults.find((b) => b.id === spec.id)!;
          entry.status = "failed";
          entry.reason = (error as Error).message.split("\n")[0];
        }
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
