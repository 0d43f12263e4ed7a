/**
 * The checkpointers the demo can run on. SQLite is embedded (a file next to the ledger); others need a
 * server and say so when it is missing.
 *
 * @module
 */
import { join } from "node:path";
import type { BaseCheckpointSaver } from "@langchain/langgraph";

/** A checkpointer the demo can open from any process, plus how to close it. */
export interface DemoBackend {
  saver: BaseCheckpointSaver & { close?: () => Promise<void> };
  /** Where the checkpoints live, for the printout. */
  where: string;
}

/** Backend names `--backend` accepts. */
export const BACKENDS = ["sqlite", "postgres"] as const;

/** Thrown when a backend cannot run here; the message says what to do. */
export class BackendUnavailableError extends Error {}

/** Opens the backend `name` for a demo run whose files live in `dir`. */
export async function openBackend(name: string, dir: string): Promise<DemoBackend> {
  if (name === "sqlite") {
    const { SqliteSaver } = await import("@resumable/sqlite");
    const file = join(dir, "checkpoints.sqlite");
    const saver = new SqliteSaver(file);
    await saver.setup();
    return { saver, where: file };
  }
  if (name === "postgres") {
    const url = process.env["RESUMABLE_POSTGRES_URL"] || process.env["DATABASE_URL"];
    if (!url) {
      throw new BackendUnavailableError(
        "--backend postgres needs a server: set RESUMABLE_POSTGRES_URL (or DATABASE_URL), e.g. " +
          "RESUMABLE_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres pnpm demo --backend postgres",
      );
    }
    let module: { PostgresSaver: { connect(url: string): Promise<DemoBackend["saver"]> } };
    try {
      module = (await import("@resumable/postgres")) as unknown as typeof module;
    } catch (error) {
      throw new BackendUnavailableError(`--backend postgres: @resumable/postgres could not be loaded (${String(error)}).`);
    }
    const saver = await module.PostgresSaver.connect(url);
    return { saver, where: url.replace(/\/\/[^@/]*@/, "//…@") };
  }
  throw new BackendUnavailableError(`Unknown backend "${name}"; the demo runs on: ${BACKENDS.join(", ")}.`);
}
