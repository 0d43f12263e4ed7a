/** What a benchmark run measures, and the two presets. @module */
import { DEFAULT_SEED } from "./payload.js";

/** LangGraph's durability modes. */
export type Durability = "exit" | "async" | "sync";

/** Sizes and repetitions of one run. */
export interface BenchConfig {
  /** Name of the result files (`<name>.json`, `<name>.md`, `<name>-*.svg`). */
  name: string;
  preset: "quick" | "full" | "custom";
  /** `"embedded"`, `"all"`, or a list of backend ids. */
  backends: "embedded" | "all" | string[];
  /** The phases to run (default: all): `growth` (bytes and reads), `latency` (steps), `ops` (direct calls). */
  phases?: Array<"growth" | "latency" | "ops">;
  seed: number;
  /** Bytes of each user and each assistant message. */
  messageBytes: number;
  /** Thread lengths reported in the growth table; the last is the longest thread written. */
  growthTurns: number[];
  /**
   * The plain reducer re-serializes the whole list at every step, so its bytes grow with the square
   * of the turns; beyond this length it is estimated from the measured curve instead of written.
   */
  plainMaxTurns: number;
  /**
   * Seconds one growth thread may take; past it the thread stops at the sample point reached and the
   * report says so. Bounds a run where a saver's cost per turn grows with the thread's depth.
   */
  growthBudgetSec: number;
  /** Extra sample points for the growth curves (thread lengths), merged with {@link growthTurns}. */
  curveTurns: number[];
  /**
   * After the longest growth thread of each kind is written, Resumable's savers prune it to its newest
   * this many checkpoints and the bytes are measured again (default 10).
   */
  pruneKeepLast?: number;
  /**
   * After the plain-reducer growth thread, our savers with bytes on disk write a second thread, up to
   * this many turns, and report what it added at each sample point (see `GrowthPoint.nextThreadPhysicalBytes`).
   * 0 or absent: not measured.
   */
  nextThreadMaxTurns?: number;
  /** Thread depths at which `getState` is measured on the `DeltaChannel` thread. */
  readDepths: number[];
  readReps: number;
  latency: {
    stateBytes: number[];
    modes: Durability[];
    warmup: number;
    reps: number;
    /** Floor operations per repetition (their median is the repetition's floor). */
    floorOps: number;
  };
  ops: { count: number; reps: number; valueBytes: number };
}

/** `pnpm bench`: embedded backends, one thread length, few repetitions (about a minute). */
export function quickConfig(name: string): BenchConfig {
  return {
    name,
    preset: "quick",
    backends: "embedded",
    seed: DEFAULT_SEED,
    messageBytes: 2048,
    growthTurns: [50],
    plainMaxTurns: 50,
    growthBudgetSec: 600,
    curveTurns: [10, 25],
    pruneKeepLast: 10,
    nextThreadMaxTurns: 200,
    readDepths: [50],
    readReps: 7,
    latency: { stateBytes: [1024, 100 * 1024], modes: ["exit", "async", "sync"], warmup: 2, reps: 5, floorOps: 50 },
    ops: { count: 200, reps: 5, valueBytes: 1024 },
  };
}

/** `pnpm bench --full`: 50, 200 and 1000 turns, more repetitions. */
export function fullConfig(name: string): BenchConfig {
  return {
    name,
    preset: "full",
    backends: "all",
    seed: DEFAULT_SEED,
    messageBytes: 2048,
    growthTurns: [50, 200, 1000],
    plainMaxTurns: 1000,
    growthBudgetSec: 240,
    curveTurns: [10, 25, 100, 150, 400, 700],
    pruneKeepLast: 10,
    nextThreadMaxTurns: 200,
    readDepths: [50, 200, 1000],
    readReps: 7,
    latency: { stateBytes: [1024, 100 * 1024], modes: ["exit", "async", "sync"], warmup: 2, reps: 11, floorOps: 100 },
    ops: { count: 300, reps: 7, valueBytes: 1024 },
  };
}
