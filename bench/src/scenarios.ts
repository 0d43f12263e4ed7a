/**
 * The four measurements: growth (with reads on the way), step latency, and direct operations.
 *
 * @module
 */
import { emptyCheckpoint, type Checkpoint } from "@langchain/langgraph-checkpoint";
import type { BackendInstance, BackendSpec, BenchContext } from "./backends.js";
import type { BenchConfig, Durability } from "./config.js";
import { CHAIN_LENGTH, STATE_LABEL, chainGraph, chatGraph, conversationGraph, userMessage, type StateKind } from "./graphs.js";
import { chatTurns, createRng, randomText, type Turn } from "./payload.js";
import { ResumableSaver } from "@resumable/core";
import type { GrowthPoint, LatencyPoint, OpsPoint, PrunePoint, ReadPoint } from "./results.js";
import { medianTime, nowMs, summarize } from "./stats.js";

/** Reports what is running now. */
export type Progress = (detail: string) => void;

function sortedUnique(values: number[]): number[] {
  return [...new Set(values)].sort((a, b) => a - b);
}

/**
 * Fits `bytes = a*T^2 + b*T` (least squares, through the origin) to the measured points and
 * evaluates it at `turns`: the plain reducer stores the whole list at every step, so its bytes grow
 * with the square of the thread's length.
 */
export function extrapolateQuadratic(points: Array<{ turns: number; bytes: number }>, turns: number): number {
  let s4 = 0, s3 = 0, s2 = 0, y2 = 0, y1 = 0;
  for (const { turns: t, bytes } of points) {
    s4 += t ** 4;
    s3 += t ** 3;
    s2 += t ** 2;
    y2 += bytes * t * t;
    y1 += bytes * t;
  }
  const det = s4 * s2 - s3 * s3;
  if (points.length < 2 || det === 0) {
    const last = points[points.length - 1];
    return last ? (last.bytes * turns * turns) / (last.turns * last.turns) : Number.NaN;
  }
  const a = (y2 * s2 - s3 * y1) / det;
  const b = (s4 * y1 - s3 * y2) / det;
  return a * turns * turns + b * turns;
}

/** A thread whose `getState` is timed: which saver's, how deep, and the graph that reads it. */
interface ReadTarget {
  backend: string;
  state: StateKind;
  depth: number;
  instance: BackendInstance;
  graph: Readable;
  threadId: string;
}

/** A thread as long as it gets, held open so its `getState` is timed with other savers' (see {@link readTogether}). */
export interface HeldThread extends ReadTarget {
  /** Prunes the thread (when the saver can) and closes its database. */
  finish(): Promise<PrunePoint | undefined>;
}

type Readable = { getState(config: { configurable: Record<string, unknown> }): Promise<{ values: unknown }> };

/**
 * Writes one chat thread turn by turn under durability `sync`, measuring the database's bytes at each
 * sample point and `getState` latency and round trips at each read depth. The read at the thread's
 * full length is left to the caller: the thread comes back held open (`held`), to be timed together
 * with the other savers' threads of the same kind.
 */
export async function runGrowth(
  spec: BackendSpec,
  ctx: BenchContext,
  config: BenchConfig,
  state: StateKind,
  progress: Progress,
): Promise<{ growth: GrowthPoint[]; reads: ReadPoint[]; prune: PrunePoint[]; notes: string[]; held?: HeldThread }> {
  const reported = sortedUnique(config.growthTurns);
  const maxTurns = state === "plain" ? Math.min(config.plainMaxTurns, reported[reported.length - 1]!) : reported[reported.length - 1]!;
  const samples = sortedUnique([...config.growthTurns, ...config.curveTurns]).filter((t) => t <= maxTurns);
  if (!samples.includes(maxTurns)) samples.push(maxTurns);
  const readDepths = new Set(config.readDepths.filter((d) => d <= maxTurns));
  const turns: Turn[] = chatTurns(config.seed, maxTurns, config.messageBytes);
  const instance = await spec.open(ctx, `growth_${spec.id}_${state}`);
  const growth: GrowthPoint[] = [];
  const reads: ReadPoint[] = [];
  const prune: PrunePoint[] = [];
  const notes: string[] = [];
  const threadStart = nowMs();
  let deferred: ReadTarget | undefined;
  let held: HeldThread | undefined;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await instance.close();
  };
  try {
    const graph = chatGraph(state, turns, instance.saver);
    let target = 0;
    const conversation = conversationGraph(turns, () => target, instance.saver);
    const threadId = `growth-${state}`;
    const runConfig = { configurable: { thread_id: threadId }, durability: "sync" as const };
    // What the database holds before the thread's first turn (tables and indexes, empty): fixed per
    // database, reported apart from what the thread adds.
    const emptyPhysical = (await instance.measureBytes()).physical;
    let written = 0;
    for (const sample of samples) {
      const spent = (nowMs() - threadStart) / 1000;
      if (spent > config.growthBudgetSec) {
        notes.push(
          `${spec.label}, ${STATE_LABEL[state]}: stopped after ${written} turns, past the time budget of ` +
            `${config.growthBudgetSec} s for one growth thread (${spent.toFixed(0)} s spent; ${((spent * 1000) / Math.max(1, written)).toFixed(0)} ms per turn on average).`,
        );
        break;
      }
      const start = nowMs();
      const from = written;
      if (state === "delta-nosnap") {
        target = sample;
        progress(`${STATE_LABEL[state]}, turns ${from + 1}-${sample} in one run`);
        await conversation.invoke({ messages: [] }, { ...runConfig, recursionLimit: 2 * (sample - from) + 10 });
        written = sample;
      }
      while (written < sample) {
        await graph.invoke({ messages: [userMessage(turns[written]!, written)] }, runConfig);
        written += 1;
        if (written % 10 === 0 || written === sample) progress(`${STATE_LABEL[state]}, turn ${written}/${maxTurns}`);
      }
      const elapsed = nowMs() - start;
      const bytes = await instance.measureBytes();
      growth.push({
        backend: spec.id,
        state,
        turns: sample,
        rawBytes: sample * 2 * config.messageBytes,
        logicalBytes: bytes.logical,
        physicalBytes: bytes.physical,
        emptyPhysicalBytes: emptyPhysical,
        estimated: false,
        msPerTurn: sample > from ? elapsed / (sample - from) : null,
      });
      const reading: ReadTarget = { backend: spec.id, state, depth: sample, instance, graph: state === "delta-nosnap" ? conversation : graph, threadId };
      if (readDepths.has(sample) && sample === maxTurns) {
        deferred = reading;
      } else if (readDepths.has(sample)) {
        progress(`getState at depth ${sample}`);
        const timed = await timeReads([reading], config.readReps);
        if (timed.errors.length > 0) throw new Error(timed.errors[0]);
        reads.push(...timed.reads);
      }
    }
    const last = growth[growth.length - 1];
    const finish = async (): Promise<PrunePoint | undefined> => {
      try {
        if (!last || !config.pruneKeepLast || !canPrune(instance.saver)) return undefined;
        progress(`prune({ keepLast: ${config.pruneKeepLast} }) at ${last.turns} turns`);
        return await measurePrune(spec.id, instance, state === "delta-nosnap" ? conversation : graph, threadId, state, last, config.pruneKeepLast);
      } finally {
        await close();
      }
    };
    if (deferred) {
      held = { ...deferred, finish };
    } else {
      const point = await finish();
      if (point) prune.push(point);
    }
    if (state === "plain") {
      for (const target of reported.filter((t) => !growth.some((g) => g.turns === t))) {
        const measured = growth.filter((g) => g.turns >= 10);
        const fit = (key: "logicalBytes" | "physicalBytes") =>
          extrapolateQuadratic(measured.filter((g) => g[key] !== null).map((g) => ({ turns: g.turns, bytes: g[key]! })), target);
        growth.push({
          backend: spec.id,
          state,
          turns: target,
          rawBytes: target * 2 * config.messageBytes,
          logicalBytes: Math.round(fit("logicalBytes")),
          physicalBytes: growth[0]?.physicalBytes === null ? null : Math.round(fit("physicalBytes")),
          estimated: true,
          msPerTurn: null,
        });
      }
    }
  } catch (error) {
    await close();
    throw error;
  }
  if (state === "plain" && spec.owner === "resumable" && (config.nextThreadMaxTurns ?? 0) > 0 && growth.some((g) => g.physicalBytes !== null)) {
    try {
      await measureNextThread(spec, ctx, config, samples, growth, progress);
    } catch (error) {
      await held?.finish();
      throw error;
    }
  }
  return { growth, reads, prune, notes, ...(held ? { held } : {}) };
}

/**
 * Times `getState` on each thread, the threads taking turns within each repetition after one unrecorded
 * read each (statement caches, JIT), then counts one read's round trips. A thread whose read fails drops
 * out, its error returned.
 */
async function timeReads(targets: ReadTarget[], reps: number): Promise<{ reads: ReadPoint[]; errors: string[] }> {
  const errors: string[] = [];
  const live = [...targets];
  const samples = new Map<ReadTarget, number[]>(live.map((t) => [t, []]));
  const messages = new Map<ReadTarget, number>();
  const read = async (t: ReadTarget) => {
    try {
      const start = nowMs();
      const snapshot = await t.graph.getState({ configurable: { thread_id: t.threadId } });
      const ms = nowMs() - start;
      messages.set(t, (snapshot.values as { messages?: unknown[] }).messages?.length ?? 0);
      return ms;
    } catch (error) {
      errors.push(`getState on ${t.backend} (${t.state}, ${t.depth} turns): ${(error as Error).message.split("\n")[0]}`);
      live.splice(live.indexOf(t), 1);
      return undefined;
    }
  };
  for (const t of [...live]) await read(t);
  for (let i = 0; i < reps; i += 1) {
    for (const t of [...live]) {
      const ms = await read(t);
      if (ms !== undefined) samples.get(t)!.push(ms);
    }
  }
  const reads: ReadPoint[] = [];
  for (const t of [...live]) {
    let roundTrips: number | null = null;
    if (t.instance.roundTrips) {
      t.instance.roundTrips.start();
      const ok = await read(t);
      roundTrips = t.instance.roundTrips.stop();
      if (ok === undefined) continue;
    }
    reads.push({ backend: t.backend, state: t.state, depth: t.depth, latencyMs: summarize(samples.get(t)!), roundTrips, messages: messages.get(t) ?? 0 });
  }
  return { reads, errors };
}

/**
 * `getState` on threads of one kind held open by {@link runGrowth}, every saver's in turn within each
 * repetition: this machine's speed drifts by up to 2x within minutes, so timing one saver's thread as
 * soon as it is written and another's ten minutes later compared the machine with itself. Each held
 * thread is then finished (pruned, closed), whatever happened.
 */
export async function readTogether(
  held: HeldThread[],
  reps: number,
  progress: Progress,
): Promise<{ reads: ReadPoint[]; prune: PrunePoint[]; errors: string[] }> {
  progress(`getState at depth ${Math.max(...held.map((h) => h.depth))}, ${held.length} savers taking turns`);
  const { reads, errors } = await timeReads(held, reps);
  const prune: PrunePoint[] = [];
  for (const h of held) {
    try {
      const point = await h.finish();
      if (point) prune.push(point);
    } catch (error) {
      errors.push(`prune on ${h.backend} (${h.state}): ${(error as Error).message.split("\n")[0]}`);
    }
  }
  return { reads, prune, errors };
}

/**
 * What a further thread costs in a database already in use: in a new database, a first thread of
 * {@link WARM_UP_TURNS} turns (its tables and indexes then exist, with their free-space and visibility
 * maps and index roots), then a second thread of other messages of the same sizes, its bytes on disk
 * measured at each sample point up to `nextThreadMaxTurns` as what it added.
 */
async function measureNextThread(
  spec: BackendSpec,
  ctx: BenchContext,
  config: BenchConfig,
  samples: number[],
  growth: GrowthPoint[],
  progress: Progress,
): Promise<void> {
  const maxTurns = Math.min(config.nextThreadMaxTurns ?? 0, Math.max(...growth.filter((g) => !g.estimated).map((g) => g.turns)));
  const instance = await spec.open(ctx, `growth_${spec.id}_next`);
  try {
    const warmUp = chatTurns(config.seed ^ 0x5eed, WARM_UP_TURNS, config.messageBytes);
    const warmGraph = chatGraph("plain", warmUp, instance.saver);
    for (let i = 0; i < WARM_UP_TURNS; i += 1) {
      await warmGraph.invoke({ messages: [userMessage(warmUp[i]!, i)] }, { configurable: { thread_id: "growth-plain-first" }, durability: "sync" });
    }
    const turns = chatTurns(config.seed ^ 0x2d, maxTurns, config.messageBytes);
    const graph = chatGraph("plain", turns, instance.saver);
    const runConfig = { configurable: { thread_id: "growth-plain-next" }, durability: "sync" as const };
    const before = (await instance.measureBytes()).physical;
    if (before === null) return;
    let written = 0;
    for (const sample of samples.filter((t) => t <= maxTurns)) {
      while (written < sample) {
        await graph.invoke({ messages: [userMessage(turns[written]!, written)] }, runConfig);
        written += 1;
        if (written % 10 === 0 || written === sample) progress(`${STATE_LABEL.plain}, a second thread, turn ${written}/${maxTurns}`);
      }
      const point = growth.find((g) => g.turns === sample && !g.estimated);
      const after = (await instance.measureBytes()).physical;
      if (point && after !== null) point.nextThreadPhysicalBytes = after - before;
    }
  } finally {
    await instance.close();
  }
}

/** Turns of the first thread written before the second thread of {@link measureNextThread}. */
const WARM_UP_TURNS = 10;

/** Whether a saver can prune: one of ours, on a store that lists and removes a thread's records. */
function canPrune(saver: unknown): saver is ResumableSaver {
  return saver instanceof ResumableSaver && saver.capabilities.retention;
}

/**
 * Prunes the growth thread to its newest `keepLast` checkpoints and measures the bytes again, with the
 * message count `getState` returns before and after (equal: the thread's state is kept whole).
 */
async function measurePrune(
  backend: string,
  instance: BackendInstance,
  graph: { getState(config: { configurable: Record<string, unknown> }): Promise<{ values: unknown }> },
  threadId: string,
  state: StateKind,
  before: GrowthPoint,
  keepLast: number,
): Promise<PrunePoint> {
  const saver = instance.saver as ResumableSaver;
  const config = { configurable: { thread_id: threadId } };
  const count = async () => ((await graph.getState(config)).values as { messages?: unknown[] }).messages?.length ?? 0;
  const messagesBefore = await count();
  const start = nowMs();
  const removed = await saver.prune([threadId], { keepLast });
  const ms = nowMs() - start;
  const bytes = await instance.measureBytes();
  const { threads: _threads, ...counts } = removed;
  return {
    backend,
    state,
    turns: before.turns,
    keepLast,
    before: { logicalBytes: before.logicalBytes, physicalBytes: before.physicalBytes },
    after: { logicalBytes: bytes.logical, physicalBytes: bytes.physical },
    removed: counts,
    ms,
    messagesBefore,
    messagesAfter: await count(),
  };
}

async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const start = nowMs();
  await fn();
  return nowMs() - start;
}

/**
 * Step latency: per repetition, the chain without a checkpointer, the chain with the saver on a new
 * thread, and the database's floor, back to back, so each ratio is taken within one repetition. The
 * durability modes take turns within each repetition (exit, async, sync, exit, ...), so a drift of
 * the machine or the database (a WAL growing, a checkpoint of it) falls on every mode alike.
 */
export async function runLatency(spec: BackendSpec, ctx: BenchContext, config: BenchConfig, progress: Progress): Promise<LatencyPoint[]> {
  const instance = await spec.open(ctx, `latency_${spec.id}`);
  const points: LatencyPoint[] = [];
  try {
    const withSaver = chainGraph(instance.saver);
    const without = chainGraph(undefined);
    const rng = createRng(config.seed ^ 0x1a7e);
    let thread = 0;
    for (const stateBytes of config.latency.stateBytes) {
      const input = { payload: randomText(rng, stateBytes), step: -1 };
      const run = (graph: typeof withSaver, mode: Durability) => {
        thread += 1;
        return graph.invoke(input, { configurable: { thread_id: `latency-${thread}` }, durability: mode });
      };
      for (let i = 0; i < config.latency.warmup; i += 1) {
        for (const durability of config.latency.modes) {
          await run(without, durability);
          await run(withSaver, durability);
        }
      }
      const series = new Map(
        config.latency.modes.map((mode) => [
          mode,
          { perStep: [] as number[], baseline: [] as number[], share: [] as number[], floors: [] as number[], writeFloors: [] as number[], overFloor: [] as number[], overWrite: [] as number[] },
        ]),
      );
      const size = stateBytes >= 1024 ? `${stateBytes / 1024} KB` : `${stateBytes} B`;
      for (let r = 0; r < config.latency.reps; r += 1) {
        for (const durability of config.latency.modes) {
          const m = series.get(durability)!;
          progress(`${size} state, ${durability}, run ${r + 1}/${config.latency.reps}`);
          const base = (await timeMs(() => run(without, durability))) / CHAIN_LENGTH;
          const step = (await timeMs(() => run(withSaver, durability))) / CHAIN_LENGTH;
          m.baseline.push(base);
          m.perStep.push(step);
          m.share.push(step - base);
          if (instance.floor) {
            const floor = await medianTime(config.latency.floorOps, instance.floor.op);
            const writeFloor = await medianTime(Math.max(5, Math.floor(config.latency.floorOps / 5)), instance.floor.writeOp);
            m.floors.push(floor);
            m.writeFloors.push(writeFloor);
            m.overFloor.push((step - base) / floor);
            m.overWrite.push((step - base) / writeFloor);
          }
        }
      }
      for (const durability of config.latency.modes) {
        const m = series.get(durability)!;
        points.push({
          backend: spec.id,
          stateBytes,
          durability,
          perStepMs: summarize(m.perStep),
          baselinePerStepMs: summarize(m.baseline),
          saverShareMs: summarize(m.share),
          floorMs: instance.floor ? summarize(m.floors) : null,
          floorLabel: instance.floor?.label ?? null,
          writeFloorMs: instance.floor ? summarize(m.writeFloors) : null,
          shareOverFloor: instance.floor ? summarize(m.overFloor) : null,
          shareOverWriteFloor: instance.floor ? summarize(m.overWrite) : null,
        });
      }
    }
  } finally {
    await instance.close();
  }
  return points;
}

/**
 * Repetitions of the direct calls run first and not recorded (each on its own thread), 6,000 calls of
 * each kind at the full preset: after one, or five, the measured calls ran in part before the JIT had
 * optimized our saver's code (MemoryStore put measured 33K/s in a process's first pass and 74K/s in
 * its second); a service runs warm.
 */
const OPS_WARM_UPS = 20;

function checkpointAt(index: number, value: string): Checkpoint {
  // Zero-padded ids sort as strings in the order they were written, as LangGraph's uuid6 ids do.
  const id = `00000000-0000-6000-8000-${index.toString(16).padStart(12, "0")}`;
  return { ...emptyCheckpoint(), id, ts: new Date(0).toISOString(), channel_values: { payload: value }, channel_versions: { payload: index + 1 } };
}

/** What {@link runOps} measured, and the backends that failed on the way (each with its error). */
export interface OpsOutcome {
  points: OpsPoint[];
  failures: Array<{ spec: BackendSpec; error: unknown }>;
}

/**
 * Direct saver calls: `count` puts (each a new checkpoint with a new value of one channel), `count`
 * getTuples of the newest checkpoint, `count` putWrites (one write each, distinct tasks) on it. The
 * checkpoints are built before the clock starts (building one costs about as much as MemorySaver's
 * `put`), and {@link OPS_WARM_UPS} repetitions warm the JIT and the database's caches, not recorded.
 *
 * Every backend of `specs` is open at once and the repetitions take them in turn (ours, then
 * LangChain's, then the next repetition): this machine's speed drifts by a factor of two within
 * minutes, and one backend's minute after another's made the same build's ratio to MemorySaver move
 * from 0.5x to 0.9x between runs. Taken in turn, a drift falls on every backend alike.
 */
export async function runOps(specs: BackendSpec[], ctx: BenchContext, config: BenchConfig, progress: (spec: BackendSpec, detail: string) => void): Promise<OpsOutcome> {
  const { count, reps, valueBytes } = config.ops;
  const value = randomText(createRng(config.seed ^ 0x0b5), valueBytes);
  const checkpoints = Array.from({ length: count }, (_, i) => checkpointAt(i, value));
  type Parent = { configurable: Record<string, unknown> };
  interface Running {
    spec: BackendSpec;
    instance: BackendInstance;
    rates: Record<OpsPoint["op"], number[]>;
    pages: Partial<Record<OpsPoint["op"], number>>;
  }
  const failures: OpsOutcome["failures"] = [];
  /** Every instance opened (each is closed at the end), and those still taking part. */
  const opened: Running[] = [];
  const running: Running[] = [];
  // The calls each pass makes, timed or counted: `count` puts on a new thread (the config of the
  // last comes back), `count` putWrites on one checkpoint.
  const puts = async (saver: BackendInstance["saver"], threadId: string): Promise<Parent> => {
    let parent: Parent = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    for (let i = 0; i < count; i += 1) {
      parent = (await saver.put(parent, checkpoints[i]!, { source: "loop", step: i, parents: {} }, { payload: i + 1 })) as Parent;
    }
    return parent;
  };
  const putWrites = async (saver: BackendInstance["saver"], parent: Parent): Promise<void> => {
    for (let i = 0; i < count; i += 1) await saver.putWrites(parent, [["payload", value]], `task-${i}`);
  };
  const fail = (entry: Running, error: unknown) => {
    failures.push({ spec: entry.spec, error });
    running.splice(running.indexOf(entry), 1);
  };
  try {
    for (const spec of specs) {
      try {
        const entry: Running = { spec, instance: await spec.open(ctx, `ops_${spec.id}`), rates: { put: [], putWrites: [], getTuple: [] }, pages: {} };
        opened.push(entry);
        running.push(entry);
      } catch (error) {
        failures.push({ spec, error });
      }
    }
    for (let r = 0; r < OPS_WARM_UPS + reps; r += 1) {
      const run = r < OPS_WARM_UPS ? `warm-up ${r + 1}/${OPS_WARM_UPS}` : `run ${r + 1 - OPS_WARM_UPS}/${reps}`;
      for (const entry of [...running]) {
        const { saver } = entry.instance;
        const record = (op: OpsPoint["op"], start: number) => {
          if (r >= OPS_WARM_UPS) entry.rates[op].push((count * 1000) / (nowMs() - start));
        };
        try {
          const threadId = `ops-${r}`;
          progress(entry.spec, `put, getTuple, putWrites, ${run}`);
          let start = nowMs();
          const parent = await puts(saver, threadId);
          record("put", start);
          const latest = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
          start = nowMs();
          for (let i = 0; i < count; i += 1) await saver.getTuple(latest);
          record("getTuple", start);
          start = nowMs();
          await putWrites(saver, parent);
          record("putWrites", start);
        } catch (error) {
          fail(entry, error);
        }
      }
    }
    for (const entry of [...running]) {
      const walPages = entry.instance.walPages;
      if (!walPages) continue;
      // Not timed: what each call's commit writes, counted from the WAL's growth.
      progress(entry.spec, "WAL pages per call");
      try {
        walPages.start();
        const parent = await puts(entry.instance.saver, "ops-wal");
        entry.pages.put = walPages.stop() / count;
        walPages.start();
        await putWrites(entry.instance.saver, parent);
        entry.pages.putWrites = walPages.stop() / count;
      } catch (error) {
        fail(entry, error);
      }
    }
  } finally {
    for (const entry of opened) await entry.instance.close().catch(() => {});
  }
  const points = running.flatMap((entry) =>
    (Object.keys(entry.rates) as Array<OpsPoint["op"]>).map((op) => {
      const point: OpsPoint = { backend: entry.spec.id, op, perSecond: summarize(entry.rates[op]), valueBytes };
      if (entry.pages[op] !== undefined) point.walPagesPerCall = entry.pages[op];
      return point;
    }),
  );
  return { points, failures };
}
