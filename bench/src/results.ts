/** The shape of `bench/results/<name>.json`. @module */
import type { BenchConfig, Durability } from "./config.js";
import type { StateKind } from "./graphs.js";
import type { Summary } from "./stats.js";

/** One backend's place in the run. */
export interface BackendResult {
  id: string;
  label: string;
  owner: "resumable" | "langchain";
  database: string;
  status: "ran" | "unavailable" | "failed" | "not selected";
  /** Why it did not run, or what failed. */
  reason?: string;
  /** Facts about its database: versions, fsync, journal mode. */
  notes: string[];
}

/** Bytes stored by one thread of `turns` turns. */
export interface GrowthPoint {
  backend: string;
  state: StateKind;
  turns: number;
  /** Raw message text written so far: the floor no saver can go under. */
  rawBytes: number;
  logicalBytes: number;
  /** `null` for in-memory savers. */
  physicalBytes: number | null;
  /**
   * Physical bytes of the same database before the thread's first turn (its empty schema, a page or
   * so per table and index: fixed per database, not per thread); `null` for in-memory savers. Absent
   * in results written before it was measured.
   */
  emptyPhysicalBytes?: number | null;
  /**
   * Physical bytes a second thread of this length added to the same database, written after this one
   * (so the tables and indexes exist: what each further thread of a database in use costs); plain
   * reducer, our savers, up to `nextThreadMaxTurns`. Absent where not measured.
   */
  nextThreadPhysicalBytes?: number;
  /** True when extrapolated from shorter threads instead of written (plain reducer, long threads). */
  estimated: boolean;
  /** Wall time to write the turns since the previous point, per turn, in ms (durability `sync`). */
  msPerTurn: number | null;
}

/** `getState` on a `DeltaChannel` thread `depth` turns deep. */
export interface ReadPoint {
  backend: string;
  state: StateKind;
  depth: number;
  latencyMs: Summary;
  /** Database round trips of one `getState`; `null` where there is no database to count. */
  roundTrips: number | null;
  /** Messages `getState` returned (a check that the thread was rebuilt whole). */
  messages: number;
}

/** Step latency of the 20-node chain, one backend, one state size, one durability mode. */
export interface LatencyPoint {
  backend: string;
  stateBytes: number;
  durability: Durability;
  /** Time per step with the saver. */
  perStepMs: Summary;
  /** Time per step of the same graph without a checkpointer, in the same repetition. */
  baselinePerStepMs: Summary;
  /** Per-step time with the saver minus without, per repetition. */
  saverShareMs: Summary;
  /** The database's floor operation (empty committed transaction, SELECT 1), per repetition. */
  floorMs: Summary | null;
  floorLabel: string | null;
  /** A committed one-row insert: a commit that reaches the disk. */
  writeFloorMs: Summary | null;
  /** Saver's share per step divided by the floor, per repetition. */
  shareOverFloor: Summary | null;
  shareOverWriteFloor: Summary | null;
}

/** Direct saver calls per second. */
export interface OpsPoint {
  backend: string;
  op: "put" | "putWrites" | "getTuple";
  perSecond: Summary;
  valueBytes: number;
  /** SQLite: pages the call's commit wrote to the WAL, on average, in an unrecorded pass after the timed ones. */
  walPagesPerCall?: number;
}

/**
 * Bytes of a growth thread before and after `prune({ keepLast })`, for savers that can prune
 * (Resumable's, on a store with `capabilities.retention`).
 */
export interface PrunePoint {
  backend: string;
  state: StateKind;
  turns: number;
  keepLast: number;
  before: { logicalBytes: number; physicalBytes: number | null };
  after: { logicalBytes: number; physicalBytes: number | null };
  /** What prune reported: records removed, and checkpoints kept because kept ones read them. */
  removed: { checkpoints: number; writes: number; blobs: number; chunks: number; bytes: number; keptForHistory: number };
  /** Wall time of the prune, ms. */
  ms: number;
  /** Messages `getState` returned before and after (equal when the thread was kept whole). */
  messagesBefore: number;
  messagesAfter: number;
}

/** A target from the issue, against the measured figure. */
export interface TargetCheck {
  target: string;
  backend: string;
  measured: string;
  /** `null` when it could not be measured (e.g. no round trips to count). */
  met: boolean | null;
}

/** Everything one run produced. */
export interface BenchResults {
  name: string;
  startedAt: string;
  finishedAt: string;
  config: BenchConfig;
  machine: Record<string, string>;
  backends: BackendResult[];
  growth: GrowthPoint[];
  /** Bytes before and after a prune of the longest growth thread of each kind (absent in runs before it existed). */
  prune?: PrunePoint[];
  reads: ReadPoint[];
  latency: LatencyPoint[];
  ops: OpsPoint[];
  targets: TargetCheck[];
  /** What the reader must know about figures that are missing or bounded (e.g. a time budget hit). */
  notes: string[];
  /** Failures that did not stop the run. */
  errors: string[];
}
