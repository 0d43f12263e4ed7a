/**
 * The shapes the suite is built from: what a user hands in (a factory), what a check sees (a
 * context), and what a run produces (a report).
 *
 * @module
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { CheckpointStore, StoreCapabilities } from "@resumable/core";

/** What a factory may return: a {@link CheckpointStore} (wrapped in a `ResumableSaver`) or any saver. */
export type ConformanceSubject = CheckpointStore | BaseCheckpointSaver;

/** What the suite hands a factory each time it calls it. */
export interface FactoryContext {
  /**
   * A directory for the store's files. The contract suite gives every call a new, empty one (removed
   * after the check), so a file-based store opened inside it starts empty. The crash-injection suite
   * gives every process of one crash job the same one, so that the resuming process opens the
   * database the killed one wrote. A server-based store may use it to name its database or schema,
   * or ignore it.
   */
  workDir: string;
}

/**
 * Returns a fresh, empty store or saver each time the suite asks. Every check opens its own, so
 * checks never see each other's data. One factory serves both the contract suite and the crash
 * suite when it keeps its data inside `context.workDir`.
 */
export type ConformanceFactory = (context: FactoryContext) => ConformanceSubject | Promise<ConformanceSubject>;

/**
 * The full form of what a module hands the CLI (its default export) or {@link runConformance}: a
 * factory plus an optional name and teardown. A bare factory function is accepted too.
 */
export interface ConformanceTarget {
  /** Shown in the report and test names. Default: the store's or saver's class name. */
  name?: string;
  /** Returns a fresh, empty store or saver. */
  create: ConformanceFactory;
  /**
   * Called after each check with what {@link create} returned, after the suite closed it (stores are
   * closed with `close()`, savers with their own `close()`/`end()` when they have one). Drop the
   * database, schema or file here.
   */
  teardown?(subject: ConformanceSubject): void | Promise<void>;
}

/** A store or saver opened for one check. */
export interface OpenedSubject {
  /** The saver the check drives: the factory's saver, or a `ResumableSaver` over its store. */
  saver: BaseCheckpointSaver;
  /** The store, when the factory returned one. */
  store: CheckpointStore | undefined;
}

/** What the suite knows about the subject before running any check. */
export interface SubjectInfo {
  name: string;
  /** `"store"`: the factory returns a CheckpointStore; `"saver"`: any BaseCheckpointSaver. */
  kind: "store" | "saver";
  /** Declared capabilities with defaults filled in (savers get the defaults). */
  capabilities: StoreCapabilities;
}

/** What a check receives. */
export interface CheckContext {
  readonly info: SubjectInfo;
  /** Opens a fresh, empty subject; closed and torn down when the check ends. */
  open(): Promise<OpenedSubject>;
  /**
   * A second saver over the same data, as a new process would build it: a new `ResumableSaver`
   * over the same store; for a saver subject, the same saver (nothing else can reach its data).
   */
  reopen(opened: OpenedSubject): BaseCheckpointSaver;
  /** A thread id no other check uses. */
  threadId(label?: string): string;
}

/** One check: an async function that throws on failure. */
export interface Check {
  /** A sentence saying what must hold, e.g. "a retried task keeps its first writes". */
  name: string;
  /**
   * Returns why this check does not apply to the subject, from its declared kind and capabilities,
   * or `undefined` when it applies. Never keyed by a backend's name.
   */
  skipUnless?(info: SubjectInfo): string | undefined;
  run(ctx: CheckContext): Promise<void>;
}

/** A group of checks about one rule of the contract. */
export interface Category {
  /** Stable kebab-case id, e.g. `"write-rules"`. */
  id: string;
  title: string;
  /** What the category proves, for the report and README. */
  description: string;
  checks: Check[];
}

/** Outcome of a check, a category, a section or a run. */
export type Status = "passed" | "failed" | "skipped";

export interface CheckResult {
  name: string;
  status: Status;
  /** Why it was skipped. */
  reason?: string;
  /** Why it failed. */
  error?: string;
  durationMs: number;
}

export interface CategoryResult {
  id: string;
  title: string;
  status: Status;
  /** For a skipped category: why. */
  reason?: string;
  /** A tally for categories whose passing checks are not listed one by one (LangChain's cases). */
  summary?: string;
  checks: CheckResult[];
}

/**
 * One part of a report: `"contract"` (our categories), `"langchain"` (LangChain's validation
 * suite), `"crash"` (the crash-injection suite), or another a later version adds.
 */
export interface ReportSection {
  id: string;
  title: string;
  status: Status;
  /** For a skipped section: why. */
  reason?: string;
  /** A one-line summary, e.g. "718 passed". */
  summary?: string;
  categories: CategoryResult[];
}

/** What a run of the suite produced; `resumable-conformance --json` writes it as is. */
export interface ConformanceReport {
  subject: SubjectInfo;
  status: "passed" | "failed";
  startedAt: string;
  durationMs: number;
  sections: ReportSection[];
}
