/**
 * `runConformance`: the whole suite as vitest tests, for a backend's own test file.
 *
 * @module
 */
import { beforeAll, describe, it } from "vitest";

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
  });
}
