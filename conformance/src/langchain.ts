/**
 * LangChain's own checkpointer validation suite (`@langchain/langgraph-checkpoint-validation`), run on
 * the subject. It registers vitest tests through vitest's globals, so it only runs inside vitest.
 *
 * @module
 */
import { deltaChannelHistoryTests, validate, type CheckpointSaverTestInitializer } from "@langchain/langgraph-checkpoint-validation";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import * as vitest from "vitest";

import { SubjectPool } from "./subject.js";
import type { ConformanceTarget } from "./types.js";

const GLOBALS = ["describe", "it", "test", "expect", "beforeAll", "afterAll", "beforeEach", "afterEach", "vi"] as const;

/**
 * LangChain's suite calls `describe`, `it` and `expect` as globals. When vitest runs without
 * `globals: true`, install vitest's own functions so users need no config change.
 */
function ensureVitestGlobals(): void {
  const g = globalThis as Record<string, unknown>;
  if (typeof g.describe === "function" && typeof g.expect === "function") return;
  for (const name of GLOBALS) g[name] ??= (vitest as unknown as Record<string, unknown>)[name];
}

/**
 * The name LangChain's suite reports the checkpointer under. Its suite skips some cases for a few
 * savers by package name; a `resumable:` prefix keeps every case running.
 */
export function langchainCheckpointerName(name: string): string {
  return `resumable:${name}`;
}

/**
 * Registers LangChain's validation suite (`validate()`, about 720 cases) and its opt-in
 * `getDeltaChannelHistory` cases on fresh subjects from the target. Call at collection time, inside
 * a vitest test file.
 */
export function registerLangchainValidation(target: ConformanceTarget, name: string): void {
  ensureVitestGlobals();
  const pool = new SubjectPool(target);
  const initializer: CheckpointSaverTestInitializer<BaseCheckpointSaver> = {
    checkpointerName: langchainCheckpointerName(name),
    createCheckpointer: async () => (await pool.open()).saver,
    destroyCheckpointer: async () => pool.closeAll(),
    afterAll: async () => pool.closeAll(),
  };
  validate(initializer);
  deltaChannelHistoryTests(initializer);
}
