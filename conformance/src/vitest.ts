/**
 * `runConformance`: the whole suite as vitest tests, for a backend's own test file.
 *
 * @module
 */
import { beforeAll, describe, it } from "vitest";

import { formatCrashReport, runCrashSuite } from "./crash/index.js";
import { registerLangchainValidation } from "./langchain.js";
import { executeCheck, selectCategories } from "./runner.js";
import { probeSubject, toTarget } from "./subject.js";
import type { Category, ConformanceFactory, ConformanceTarget, SubjectInfo } from "./types.js";

/** Options of {@link runConformance}. */
export interface RunConformanceOptions {
  /** Shown in test names. Default: the target's name, else `"store"`. */
  name?: string;
  /** Called after each check with what the factory returned (drop a database, delete a file). */
  teardown?: ConformanceTarget["teardown"];
  /** Categories to run (objects or ids). Default: all. */
  categories?: ReadonlyArray<Category | string>;
  /** Also run LangChain's validation suite and its delta-history cases. Default `true`. */
  langchain?: boolean;
  /** Timeout of each test, in ms. Default 120 000 (a remote database may be slow). */
  timeout?: number;
  /**
   * The crash-injection suite. Its child processes load the factory from a module, so pass the path of
   * a module that default-exports the same factory (`({ workDir }) => store`). Without it the suite is
   * reported as skipped, with that reason; `false` leaves it out.
   */
  crash?: { factoryModule: string; quick?: boolean | number; timeout?: number } | false;
}

/**
 * Registers the conformance suite as vitest tests. The factory returns a fresh, empty
 * `CheckpointStore` (wrapped in a `ResumableSaver`) or any `BaseCheckpointSaver`, whenever a check
 * asks. Checks that do not apply to the subject's declared capabilities are skipped with the reason.
 *
 * @example
 * ```ts
 * import { runConformance } from "@resumable/conformance";
 * import { MyStore } from "../src/my-store.js";
 * runConformance(() => new MyStore({ file: tempFile() }), { name: "my-store" });
 * ```
 */
export function runConformance(factory: ConformanceFactory | ConformanceTarget, options: RunConformanceOptions = {}): void {
  const base = toTarget(factory);
  const target: ConformanceTarget = { ...base, teardown: options.teardown ?? base.teardown };
  const name = options.name ?? target.name ?? "store";
  const timeout = options.timeout ?? 120_000;
  describe(`resumable conformance: ${name}`, () => {
    let info: SubjectInfo | undefined;
    beforeAll(async () => {
      info = await probeSubject(target);
      if (options.name) info.name = options.name;
    }, timeout);
    for (const category of selectCategories(options.categories)) {
      describe(`${category.id}: ${category.title}`, () => {
        for (const check of category.checks) {
          it(
            check.name,
            async (ctx) => {
              const reason = check.skipUnless?.(info!);
              if (reason !== undefined) {
                console.info(`[resumable-conformance] skipped ${category.id} › ${check.name}: ${reason}`);
                ctx.skip(reason);
                return;
              }
              await executeCheck(target, info!, check);
            },
            timeout,
          );
        }
      });
    }
    if (options.langchain !== false) {
      describe("langchain-validation", () => registerLangchainValidation(target, name));
    }
    if (options.crash !== false) {
      const crash = options.crash;
      describe("crash-injection", () => {
        it(
          "survives SIGKILL after every database command in every graph and durability mode, then resumes",
          async (ctx) => {
            if (!crash) {
              const reason = "the crash suite needs the factory as a module path (options.crash.factoryModule) for its child processes";
              console.info(`[resumable-conformance] skipped crash-injection: ${reason}`);
              ctx.skip(reason);
              return;
            }
            const report = await runCrashSuite({ factoryModule: crash.factoryModule, quick: crash.quick ?? false, storeName: name });
            console.info(formatCrashReport(report));
            if (!report.applicable) {
              ctx.skip(`not applicable: ${report.reason ?? "the store cannot outlive its process"}`);
              return;
            }
            const failures = report.cells.filter((c) => c.status === "fail").flatMap((c) => c.messages);
            if (failures.length > 0) {
              throw new Error(`${failures.length} crash-injection failures:\n${failures.slice(0, 20).join("\n")}`);
            }
          },
          crash ? (crash.timeout ?? 30 * 60_000) : timeout,
        );
      });
    }
  });
}
