/**
 * Turns what a factory returns into a saver the checks can drive, and back into nothing afterwards.
 *
 * @module
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { DEFAULT_CAPABILITIES, ResumableSaver, type CheckpointStore } from "@resumable/core";

import type { CheckContext, ConformanceFactory, ConformanceSubject, ConformanceTarget, OpenedSubject, SubjectInfo } from "./types.js";

/** Thrown when a factory returns something that is neither a store nor a saver. */
export class InvalidSubjectError extends Error {
  constructor(detail: string) {
    super(
      `The conformance factory returned ${detail}. It must return a CheckpointStore (setup, putCheckpoint, ` +
        `putWrites, getCheckpoint, listCheckpoints, getHistory, getChunks, getBlobs, deleteThread, close) ` +
        `or a BaseCheckpointSaver (getTuple, list, put, putWrites, deleteThread).`,
    );
    this.name = "InvalidSubjectError";
  }
}

const STORE_METHODS = ["setup", "putCheckpoint", "putWrites", "getCheckpoint", "listCheckpoints", "getHistory", "getChunks", "getBlobs", "deleteThread", "close"];
const SAVER_METHODS = ["getTuple", "list", "put", "putWrites", "deleteThread"];

/** True when the value implements every method of {@link CheckpointStore}. */
export function isCheckpointStore(value: unknown): value is CheckpointStore {
  return hasMethods(value, STORE_METHODS);
}

/** True when the value implements LangGraph's saver API (duck-typed: two copies of the package may coexist). */
export function isCheckpointSaver(value: unknown): value is BaseCheckpointSaver {
  return hasMethods(value, SAVER_METHODS);
}

function hasMethods(value: unknown, methods: string[]): boolean {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  return methods.every((m) => typeof record[m] === "function");
}

/** Accepts a bare factory, a {@link ConformanceTarget}, or a module namespace whose default is one. */
export function toTarget(value: unknown, where = "the conformance target"): ConformanceTarget {
  if (typeof value === "function") return { create: value as ConformanceFactory };
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    if (typeof record.create === "function") return record as unknown as ConformanceTarget;
    if ("default" in record) return toTarget(record.default, where);
  }
  throw new InvalidSubjectError(
    `no factory: ${where} must be (or default-export) a function returning a fresh store or saver, or ` +
      `an object { name?, create, teardown? }; got ${value === null ? "null" : typeof value}`,
  );
}

/** Opens subjects for checks and closes them afterwards. */
export class SubjectPool {
  private readonly opened: Array<{ raw: ConformanceSubject; subject: OpenedSubject; workDir: string }> = [];

  constructor(private readonly target: ConformanceTarget) {}

  /** Calls the factory, wraps a store in a saver and runs `setup()`. */
  async open(): Promise<OpenedSubject> {
    const workDir = mkdtempSync(join(tmpdir(), "resumable-conformance-"));
    let raw: ConformanceSubject;
    try {
      raw = await this.target.create({ workDir });
    } catch (error) {
      rmSync(workDir, { recursive: true, force: true });
      throw error;
    }
    let subject: OpenedSubject;
    if (isCheckpointStore(raw)) {
      const saver = new ResumableSaver(raw);
      subject = { saver, store: raw };
      this.opened.push({ raw, subject, workDir });
      await saver.setup();
    } else if (isCheckpointSaver(raw)) {
      subject = { saver: raw, store: undefined };
      this.opened.push({ raw, subject, workDir });
      const setup = (raw as unknown as { setup?: () => unknown }).setup;
      if (typeof setup === "function") await setup.call(raw);
    } else {
      rmSync(workDir, { recursive: true, force: true });
      throw new InvalidSubjectError(describeValue(raw));
    }
    return subject;
  }

  /** Closes every subject opened so far, newest first, then runs the target's teardown on each. */
  async closeAll(): Promise<void> {
    const errors: unknown[] = [];
    while (this.opened.length > 0) {
      const { raw, subject, workDir } = this.opened.pop()!;
      try {
        if (subject.store) await subject.store.close();
        else await closeSaver(subject.saver);
      } catch (error) {
        // A store closed twice (by the check and here) may complain; the teardown still runs.
        if (!/closed/i.test(String(error))) errors.push(error);
      }
      try {
        await this.target.teardown?.(raw);
      } catch (error) {
        errors.push(error);
      }
      rmSync(workDir, { recursive: true, force: true });
    }
    if (errors.length > 0) throw errors[0];
  }
}

async function closeSaver(saver: BaseCheckpointSaver): Promise<void> {
  const record = saver as unknown as Record<string, unknown>;
  for (const name of ["close", "end"]) {
    const fn = record[name];
    if (typeof fn === "function") {
      await (fn as () => unknown).call(saver);
      return;
    }
  }
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value !== "object") return `a ${typeof value}`;
  const name = (value as object).constructor?.name;
  return `an object${name && name !== "Object" ? ` of class ${name}` : ""} with neither the store nor the saver methods`;
}

/** Opens one subject to learn its kind, name and capabilities, then closes it. */
export async function probeSubject(target: ConformanceTarget): Promise<SubjectInfo> {
  const pool = new SubjectPool(target);
  try {
    const opened = await pool.open();
    const name = target.name ?? (opened.store ?? opened.saver).constructor?.name ?? "subject";
    return {
      name,
      kind: opened.store ? "store" : "saver",
      capabilities: { ...DEFAULT_CAPABILITIES, ...(opened.store?.capabilities ?? {}) },
    };
  } finally {
    await pool.closeAll();
  }
}

/** A check context over a pool; the caller closes the pool when the check ends. */
export function createContext(info: SubjectInfo, pool: SubjectPool): CheckContext {
  return {
    info,
    open: () => pool.open(),
    reopen: (opened) => (opened.store ? new ResumableSaver(opened.store) : opened.saver),
    threadId: (label = "thread") => `${label}-${randomUUID()}`,
  };
}
