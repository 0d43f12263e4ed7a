/**
 * The crash suite's child process: loads the store factory, runs jobs sent by the parent over IPC,
 * and kills itself with SIGKILL at the job's kill point. A child that was not killed takes further
 * jobs, so that only the deaths cost a process start.
 *
 * @module
 */
import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Command, type BaseCheckpointSaver, type LangGraphRunnableConfig } from "@langchain/langgraph";
import * as core from "@resumable/core";
import { ResumableSaver, type CheckpointStore } from "@resumable/core";
import { crashGraph, type CrashGraph, type NodeEffects, type RunnableGraph } from "./graphs.js";
import {
  SIDE_FILES,
  stripTaskIds,
  type AttemptEntry,
  type ChildMessage,
  type CommandCounting,
  type ExecEntry,
  type Inspection,
  type JobRequest,
  type JobResult,
  type SeenCheckpoint,
  type WriteLogEntry,
} from "./protocol.js";

/** What a factory module's default export may return. */
export type CrashTarget = CheckpointStore | BaseCheckpointSaver;

/** The default export of a store factory module: called once per job, in the child process. */
export type CrashStoreFactory = (context: { workDir: string }) => CrashTarget | Promise<CrashTarget>;

type KeyFn = (config: LangGraphRunnableConfig, label?: string) => string;
const idempotencyKey = (core as unknown as { idempotencyKey?: KeyFn }).idempotencyKey;

const RESUME_ROUNDS = 8;
const SPECIAL_WRITE_CHANNELS = new Set(["__interrupt__", "__error__", "__resume__"]);

function send(message: ChildMessage): void {
  process.send?.(message);
}

function isStore(value: unknown): value is CheckpointStore {
  return typeof (value as CheckpointStore | undefined)?.putCheckpoint === "function";
}

function isSaver(value: unknown): value is BaseCheckpointSaver {
  const saver = value as BaseCheckpointSaver | undefined;
  return typeof saver?.getTuple === "function" && typeof saver.put === "function" && typeof saver.putWrites === "function";
}

interface Opened {
  saver: BaseCheckpointSaver;
  store: CheckpointStore | undefined;
  name: string;
}

async function open(factory: CrashStoreFactory, workDir: string): Promise<Opened> {
  const target = await factory({ workDir });
  if (isStore(target)) {
    const saver = new ResumableSaver(target);
    await saver.setup();
    return { saver, store: target, name: target.constructor?.name ?? "store" };
  }
  if (isSaver(target)) {
    const withSetup = target as BaseCheckpointSaver & { setup?: () => Promise<void>; store?: unknown };
    await withSetup.setup?.();
    return { saver: target, store: isStore(withSetup.store) ? withSetup.store : undefined, name: target.constructor?.name ?? "saver" };
  }
  throw new TypeError(
    `The factory's default export returned ${describe(target)}; it must return a CheckpointStore (with putCheckpoint) ` +
      `or a BaseCheckpointSaver (with getTuple, put, putWrites), or a promise of one.`,
  );
}

function describe(value: unknown): string {
  if (value === null || typeof value !== "object") return String(value);
  return `an instance of ${value.constructor?.name ?? "Object"} without the expected methods`;
}

async function close(opened: Opened): Promise<void> {
  const closable = opened.saver as { close?: () => Promise<void> };
  if (typeof closable.close === "function") await closable.close();
  else await opened.store?.close();
}

/** Calls `onCommand` after each command the target performs, as deep as it reports. */
function instrument(opened: Opened, onCommand: (name: string) => void): CommandCounting {
  const store = opened.store;
  if (store) {
    const capabilities = { ...core.DEFAULT_CAPABILITIES, ...store.capabilities };
    if (capabilities.commandEvents && typeof store.instrument === "function") {
      store.instrument((event) => onCommand(event.command));
      return "database commands";
    }
    wrapMethods(store, ["putCheckpoint", "putWrites", "getCheckpoint", "getHistory", "getChunks", "getBlobs", "deleteThread"], onCommand);
    wrapIterable(store, "listCheckpoints", onCommand);
    return "store calls";
  }
  wrapMethods(opened.saver, ["put", "putWrites", "getTuple", "getDeltaChannelHistory", "deleteThread"], onCommand);
  wrapIterable(opened.saver, "list", onCommand);
  return "saver calls";
}

function wrapMethods(target: object, names: string[], onCommand: (name: string) => void): void {
  const record = target as Record<string, unknown>;
  for (const name of names) {
    const original = record[name];
    if (typeof original !== "function") continue;
    record[name] = async (...args: unknown[]) => {
      const result: unknown = await (original as (...a: unknown[]) => unknown).apply(target, args);
      onCommand(name);
      return result;
    };
  }
}

function wrapIterable(target: object, name: string, onCommand: (name: string) => void): void {
  const record = target as Record<string, unknown>;
  const original = record[name];
  if (typeof original !== "function") return;
  record[name] = async function* (...args: unknown[]) {
    yield* (original as (...a: unknown[]) => AsyncIterable<unknown>).apply(target, args);
    onCommand(name);
  };
}

/** Logs put/putWrites issue and resolution to the side file, outermost around the saver. */
function logWrites(saver: BaseCheckpointSaver, file: string, worker: string): void {
  const log = (entry: WriteLogEntry) => appendFileSync(file, `${JSON.stringify(entry)}\n`);
  const put = saver.put.bind(saver);
  const putWrites = saver.putWrites.bind(saver);
  saver.put = async (config, checkpoint, metadata, newVersions) => {
    const base = {
      w: worker,
      ns: String(config.configurable?.["checkpoint_ns"] ?? ""),
      checkpointId: checkpoint.id,
      parentId: config.configurable?.["checkpoint_id"] as string | undefined,
    };
    log({ ...base, event: "put-issued" });
    const result = await put(config, checkpoint, metadata, newVersions);
    log({ ...base, event: "put-resolved" });
    return result;
  };
  saver.putWrites = async (config, writes, taskId, ...rest: unknown[]) => {
    const base = {
      w: worker,
      ns: String(config.configurable?.["checkpoint_ns"] ?? ""),
      checkpointId: String(config.configurable?.["checkpoint_id"]),
      taskId,
      channels: writes.map(([channel]) => channel),
    };
    log({ ...base, event: "writes-issued" });
    // Pass everything on: LangGraph's 1.x savers take the task path as a fourth argument.
    await (putWrites as (...args: unknown[]) => Promise<void>)(config, writes, taskId, ...rest);
    log({ ...base, event: "writes-resolved" });
  };
}

function kill(workDir: string, what: Record<string, unknown>): never {
  writeFileSync(join(workDir, SIDE_FILES.kill), JSON.stringify(what));
  process.kill(process.pid, "SIGKILL");
  // SIGKILL is not delivered synchronously everywhere; never let the run go on meanwhile.
  for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
}

function effects(job: JobRequest): NodeEffects {
  const ledger = join(job.workDir, SIDE_FILES.ledger);
  mkdirSync(ledger, { recursive: true });
  return {
    started(node, config) {
      const entry: ExecEntry = {
        w: job.worker,
        node,
        step: Number(config.metadata?.["langgraph_step"]),
        ns: stripTaskIds(namespaceOfTask(String(config.configurable?.["checkpoint_ns"] ?? ""))),
        taskId: String(config.configurable?.["__pregel_task_id"] ?? ""),
        path: JSON.stringify(config.metadata?.["langgraph_path"] ?? null),
      };
      appendFileSync(join(job.workDir, SIDE_FILES.exec), `${JSON.stringify(entry)}\n`);
    },
    charge(node, config) {
      if (!idempotencyKey) throw new Error("@resumable/core does not export idempotencyKey");
      const key = idempotencyKey(config, "charge");
      let charged = true;
      try {
        // O_EXCL: the ledger's unique key. A second attempt under the same key changes nothing.
        closeSync(openSync(join(ledger, key), "wx"));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        charged = false;
      }
      const attempt: AttemptEntry = { w: job.worker, node, key, charged };
      appendFileSync(join(job.workDir, SIDE_FILES.attempts), `${JSON.stringify(attempt)}\n`);
      if (job.kill?.kind === "node" && job.kill.node === node) kill(job.workDir, { kill: "node", node });
    },
  };
}

/** A task's namespace is `parent|node:<task id>`; the enclosing graph's is `parent`. */
function namespaceOfTask(taskNs: string): string {
  const parts = taskNs.split("|");
  parts.pop();
  return parts.join("|");
}

function runConfig(job: JobRequest, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { configurable: { thread_id: job.threadId, ...extra }, durability: job.mode, recursionLimit: 50 };
}

function hasInterrupt(state: Awaited<ReturnType<RunnableGraph["getState"]>>): boolean {
  return state.tasks.some((task) => (task.interrupts?.length ?? 0) > 0);
}

/** The run of a crash or baseline job: the input, then every interrupt answered, to the end. */
async function runFromInput(graph: RunnableGraph, spec: CrashGraph, job: JobRequest): Promise<void> {
  await graph.invoke(spec.input, runConfig(job));
  for (let round = 0; round < RESUME_ROUNDS; round++) {
    const state = await graph.getState(runConfig(job));
    if (!hasInterrupt(state)) return;
    if (job.kill?.kind === "interrupt") kill(job.workDir, { kill: "interrupt" });
    await graph.invoke(new Command({ resume: spec.resumeValue }), runConfig(job));
  }
}

/** What a fresh process does with whatever it finds: start over, continue, or answer the interrupt. */
async function resumeToEnd(graph: RunnableGraph, spec: CrashGraph, job: JobRequest, actions: string[]): Promise<void> {
  for (let round = 0; round < RESUME_ROUNDS; round++) {
    const state = await graph.getState(runConfig(job));
    if (state.config?.configurable?.["checkpoint_id"] === undefined) {
      actions.push("start over");
      await graph.invoke(spec.input, runConfig(job));
    } else if (hasInterrupt(state)) {
      actions.push("resume interrupt");
      await graph.invoke(new Command({ resume: spec.resumeValue }), runConfig(job));
    } else if (state.next.length > 0 || state.tasks.length > 0) {
      // Tasks whose writes are all on disk are not in `next`, yet the step is not applied: continue.
      actions.push("continue");
      await graph.invoke(null, runConfig(job));
    } else {
      return;
    }
  }
  throw new Error(`the graph did not finish after ${RESUME_ROUNDS} resumes`);
}

function readLines<T>(file: string): T[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

/**
 * Everything visible on disk for the thread: every checkpoint must load with all its blobs, its
 * pending writes must hold every write the crashed process saw resolve, exactly once, and no
 * checkpoint may be durable while writes issued before it on its parent are not (LangGraph Python
 * issue #8039).
 */
async function inspect(opened: Opened, graph: RunnableGraph, job: JobRequest): Promise<Inspection> {
  const violations: string[] = [];
  const checkpoints: SeenCheckpoint[] = [];
  const pending = new Map<string, Array<[string, string]>>();
  const key = (ns: string, id: string) => `${ns}\u0000${id}`;
  const listed: Array<{ ns: string; id: string; parentId: string | undefined; step: number | undefined }> = [];
  try {
    for await (const tuple of opened.saver.list({ configurable: { thread_id: job.threadId } })) {
      listed.push({
        ns: String(tuple.config.configurable?.["checkpoint_ns"] ?? ""),
        id: String(tuple.config.configurable?.["checkpoint_id"]),
        parentId: tuple.parentConfig?.configurable?.["checkpoint_id"] as string | undefined,
        step: typeof tuple.metadata?.step === "number" ? tuple.metadata.step : undefined,
      });
    }
  } catch (error) {
    violations.push(`listing the thread's checkpoints failed: ${message(error)}`);
  }
  for (const entry of listed) {
    const where = `checkpoint ${entry.id} (namespace "${stripTaskIds(entry.ns)}", step ${entry.step})`;
    try {
      const tuple = await opened.saver.getTuple({
        configurable: { thread_id: job.threadId, checkpoint_ns: entry.ns, checkpoint_id: entry.id },
      });
      if (!tuple) {
        violations.push(`${where} is listed but getTuple does not return it`);
        continue;
      }
      pending.set(
        key(entry.ns, entry.id),
        (tuple.pendingWrites ?? []).map(([taskId, channel]) => [taskId, channel] as [string, string]),
      );
    } catch (error) {
      violations.push(`${where} is listed but cannot be loaded: ${message(error)}`);
      continue;
    }
    if (opened.store) {
      const stored = await opened.store.getCheckpoint({ threadId: job.threadId, checkpointNs: entry.ns, checkpointId: entry.id });
      if (!stored) {
        violations.push(`${where} is listed but the store's getCheckpoint does not return it`);
      } else {
        const blobs = new Set(stored.blobs.map((b) => `${b.channel}\u0000${b.version}`));
        // The saver says which blobs the record cannot do without (a channel without a value has none).
        const required =
          opened.saver instanceof ResumableSaver
            ? await opened.saver.requiredBlobs(stored)
            : Object.entries(stored.record.channelVersions).map(([channel, version]) => ({ channel, version }));
        for (const { channel, version } of required) {
          if (!blobs.has(`${channel}\u0000${version}`)) {
            violations.push(`${where} is torn: it references channel "${channel}" at version ${version} but that blob is missing`);
          }
        }
        const seen = new Set<string>();
        for (const write of stored.writes) {
          const id = `${write.taskId}\u0000${write.idx}`;
          if (seen.has(id)) violations.push(`${where} holds write ${write.idx} of task ${write.taskId} twice`);
          seen.add(id);
        }
      }
    }
    const seen: SeenCheckpoint = { ...entry };
    if (entry.ns === "") {
      try {
        seen.values = (await graph.getState(runConfig(job, { checkpoint_id: entry.id }))).values;
      } catch (error) {
        violations.push(`${where}: graph.getState fails on it: ${message(error)}`);
      }
    }
    checkpoints.push(seen);
  }

  // Writes the crashed process saw resolve, and #8039 ordering.
  const log = readLines<WriteLogEntry>(join(job.workDir, SIDE_FILES.writes)).filter((e) => e.w !== job.worker);
  let orphanedWrites = 0;
  for (const entry of log) {
    if (entry.event !== "writes-resolved") continue;
    const writes = pending.get(key(entry.ns, entry.checkpointId));
    if (writes === undefined) {
      orphanedWrites++;
      continue;
    }
    for (const channel of new Set(entry.channels ?? [])) {
      const expected = (entry.channels ?? []).filter((c) => c === channel).length;
      const found = writes.filter(([t, c]) => t === entry.taskId && c === channel).length;
      if (found < expected) {
        violations.push(
          `write "${channel}" of task ${entry.taskId} on checkpoint ${entry.checkpointId} was lost: putWrites had resolved, ` +
            `the checkpoint is durable, but it holds ${found} of ${expected}`,
        );
      } else if (found > expected && !SPECIAL_WRITE_CHANNELS.has(channel)) {
        violations.push(`write "${channel}" of task ${entry.taskId} on checkpoint ${entry.checkpointId} is duplicated (${found} copies)`);
      }
    }
  }
  const durable = new Set(checkpoints.map((c) => key(c.ns, c.id)));
  for (const entry of log) {
    if (entry.event === "put-resolved" && !durable.has(key(entry.ns, entry.checkpointId))) {
      violations.push(
        `checkpoint ${entry.checkpointId} (namespace "${stripTaskIds(entry.ns)}") was lost: its put had resolved in the killed ` +
          `process, but it is not there after the crash (is the factory opening the same database in every process?)`,
      );
    }
  }
  log.forEach((entry, index) => {
    if (entry.event !== "put-issued" || entry.parentId === undefined || !durable.has(key(entry.ns, entry.checkpointId))) return;
    const parentWrites = pending.get(key(entry.ns, entry.parentId));
    for (const earlier of log.slice(0, index)) {
      if (earlier.event !== "writes-issued" || earlier.ns !== entry.ns || earlier.checkpointId !== entry.parentId) continue;
      const present = (parentWrites ?? []).some(([t]) => t === earlier.taskId);
      if (!present) {
        violations.push(
          `checkpoint ${entry.checkpointId} became durable before the writes of task ${earlier.taskId} ` +
            `(${(earlier.channels ?? []).join(", ")}) on its parent ${entry.parentId}, issued before it, were stored ` +
            `(LangGraph Python issue #8039: a checkpoint must not land before the writes of the step before it)`,
        );
      }
    }
  });
  return { checkpoints, violations, orphanedWrites };
}

function message(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

async function runJob(factory: CrashStoreFactory, job: JobRequest): Promise<JobResult> {
  const spec = crashGraph(job.graph);
  const cpu = process.cpuUsage();
  const result: JobResult = { type: "result", id: job.id, commands: 0, actions: [] };
  const opened = await open(factory, job.workDir);
  const names: string[] = [];
  const kill = job.kill;
  // Only the run's own commands count: the inspection after a baseline run is not part of it.
  let counting = true;
  instrument(opened, (name) => {
    if (!counting) return;
    result.commands++;
    if (job.phase === "baseline") names.push(name);
    if (kill?.kind === "command" && result.commands === kill.k) {
      killAfterCommand(job.workDir, kill.k, name);
    }
  });
  logWrites(opened.saver, join(job.workDir, SIDE_FILES.writes), job.worker);
  const graph = spec.build(opened.saver, effects(job));
  try {
    if (job.phase === "resume") {
      result.inspection = await inspect(opened, graph, job);
      await resumeToEnd(graph, spec, job, result.actions);
    } else {
      await runFromInput(graph, spec, job);
    }
    counting = false;
    result.final = (await graph.getState(runConfig(job))).values;
    if (job.phase === "baseline") {
      result.commandNames = names;
      result.inspection = await inspect(opened, graph, job);
    }
  } catch (error) {
    result.error = message(error);
  } finally {
    await close(opened).catch(() => undefined);
  }
  const used = process.cpuUsage(cpu);
  result.cpuMs = Math.round((used.user + used.system) / 1000);
  return result;
}

function killAfterCommand(workDir: string, k: number, command: string): never {
  return kill(workDir, { kill: "command", k, command });
}

/** After the first job, hand V8's compiled code to the loader (see bundle.ts) for the next children. */
function saveCodeCache(): void {
  const holder = globalThis as { __resumableSaveCodeCache?: () => void };
  const save = holder.__resumableSaveCodeCache;
  holder.__resumableSaveCodeCache = undefined;
  save?.();
}

/**
 * The child's main loop. Called by the generated entry module with the factory's default export.
 *
 * @internal
 */
export async function childMain(factoryExport: unknown): Promise<void> {
  process.on("disconnect", () => process.exit(0));
  // A `{ create }` object (the contract suite's module shape) works too.
  const create = (factoryExport as { create?: unknown } | undefined)?.create;
  const candidate = typeof factoryExport === "function" ? factoryExport : typeof create === "function" ? create.bind(factoryExport) : undefined;
  if (candidate === undefined) {
    send({ type: "failed", error: `the factory module's default export is ${typeof factoryExport}, not a function returning a store or saver` });
    return;
  }
  const factory = candidate as CrashStoreFactory;
  let queue = Promise.resolve();
  process.on("message", (request: JobRequest) => {
    if (request?.type !== "job") return;
    queue = queue.then(async () => {
      try {
        send(await runJob(factory, request));
        saveCodeCache();
      } catch (error) {
        send({ type: "result", id: request.id, commands: 0, actions: [], error: message(error) });
      }
    });
  });
  const probeDir = process.env["RESUMABLE_CRASH_PROBE_DIR"];
  if (probeDir === undefined) {
    // Only the first child describes the factory; the others are ready as soon as they are loaded.
    const startup = process.cpuUsage();
    send({ type: "ready", pid: process.pid, startCpuMs: Math.round((startup.user + startup.system) / 1000), kind: "store", name: "", persistent: true, counting: "store calls" });
    return;
  }
  try {
    const opened = await open(factory, probeDir);
    const capabilities = opened.store ? { ...core.DEFAULT_CAPABILITIES, ...opened.store.capabilities } : undefined;
    const counting: CommandCounting = opened.store
      ? capabilities?.commandEvents && typeof opened.store.instrument === "function"
        ? "database commands"
        : "store calls"
      : "saver calls";
    const persistent = capabilities ? capabilities.persistent : !/^(MemorySaver|InMemory)/.test(opened.saver.constructor?.name ?? "");
    await close(opened);
    const startup = process.cpuUsage();
    send({ type: "ready", pid: process.pid, startCpuMs: Math.round((startup.user + startup.system) / 1000), kind: opened.store ? "store" : "saver", name: opened.name, persistent, counting });
  } catch (error) {
    send({ type: "failed", error: message(error) });
  }
}
