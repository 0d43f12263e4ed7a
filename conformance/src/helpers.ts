/**
 * Small helpers the checks share: failures with readable messages, and checkpoint fixtures built
 * through LangGraph's own types.
 *
 * @module
 */
import { isDeepStrictEqual, inspect } from "node:util";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  emptyCheckpoint,
  uuid6,
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
} from "@langchain/langgraph-checkpoint";

/** A broken rule: the message says what was expected and what came back. */
export class ConformanceFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConformanceFailure";
  }
}

/** Throws a {@link ConformanceFailure} unless `condition` holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new ConformanceFailure(message);
}

/** Throws unless `actual` deep-equals `expected` (same prototypes, same values). */
export function checkEqual(actual: unknown, expected: unknown, what: string): void {
  if (!isDeepStrictEqual(actual, expected)) {
    throw new ConformanceFailure(`${what}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

/** A short rendering of a value for failure messages. */
export function show(value: unknown): string {
  const text = inspect(value, { depth: 4, breakLength: Infinity, maxArrayLength: 12, maxStringLength: 80 });
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

/** Runs `fn` and returns what it threw, or fails when it did not throw. */
export async function expectThrow(fn: () => Promise<unknown>, what: string): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new ConformanceFailure(`${what}: expected an error, but the call succeeded`);
}

/** Collects an async iterable. */
export async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of iterable) out.push(item);
  return out;
}

/** The root config of a thread (and namespace). */
export function threadConfig(threadId: string, checkpointNs = ""): RunnableConfig {
  return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs } };
}

/** Metadata as the runtime writes it, plus extra keys. */
export function metadata(step: number, extra: Record<string, unknown> = {}): CheckpointMetadata {
  return { source: "loop", step, parents: {}, ...extra } as CheckpointMetadata;
}

/**
 * A checkpoint whose listed channels all get a new version; `values` holds the channels that have a
 * value at that version (a channel in `versions` but not in `values` is versioned but empty, as a
 * `DeltaChannel` between snapshots is).
 */
export function makeCheckpoint(values: Record<string, unknown>, versions: ChannelVersions = versionsOf(values, 1)): Checkpoint {
  return { ...emptyCheckpoint(), id: uuid6(0), channel_values: { ...values }, channel_versions: { ...versions } };
}

function versionsOf(values: Record<string, unknown>, version: number): ChannelVersions {
  return Object.fromEntries(Object.keys(values).map((k) => [k, version]));
}

/** Puts a checkpoint whose every channel is new; returns the config naming it. */
export async function putCheckpoint(
  saver: BaseCheckpointSaver,
  parent: RunnableConfig,
  values: Record<string, unknown>,
  options: { versions?: ChannelVersions; newVersions?: ChannelVersions; metadata?: CheckpointMetadata } = {},
): Promise<RunnableConfig> {
  const versions = options.versions ?? versionsOf(values, 1);
  const checkpoint = makeCheckpoint(values, versions);
  return saver.put(parent, checkpoint, options.metadata ?? metadata(0), options.newVersions ?? versions);
}

/** getTuple that fails with a clear message when the checkpoint is missing. */
export async function mustGet(saver: BaseCheckpointSaver, config: RunnableConfig, what: string): Promise<CheckpointTuple> {
  const tuple = await saver.getTuple(config);
  check(tuple, `${what}: getTuple(${show(config.configurable)}) returned undefined`);
  return tuple;
}

/** The checkpoint id in a config. */
export function idOf(config: RunnableConfig): string {
  const id = config.configurable?.checkpoint_id;
  check(typeof id === "string", `expected a config with a checkpoint_id, got ${show(config)}`);
  return id;
}
