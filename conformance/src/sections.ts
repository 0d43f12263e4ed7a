/**
 * Parts of the CLI's report beyond the contract categories and LangChain's suite. The crash-injection
 * suite registers here: it receives the module path, so that its child processes load the same factory.
 *
 * @module
 */
import type { ConformanceTarget, ReportSection, SubjectInfo } from "./types.js";

/** Produces one section of the report. */
export interface SectionRunner {
  /** The section id in the report, e.g. `"crash"`. */
  id: string;
  run(context: { modulePath: string; target: ConformanceTarget; info: SubjectInfo }): Promise<ReportSection>;
}

/** Sections the CLI runs after the contract categories and LangChain's suite, in order. */
export const EXTRA_SECTIONS: SectionRunner[] = [];
