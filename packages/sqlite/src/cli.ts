/**
 * `resumable-sqlite`: command-line tools for `@resumable/sqlite`.
 *
 * `resumable-sqlite import-langchain <langchain.sqlite> <resumable.sqlite> [--thread ID]...` copies
 * every thread that LangChain's `SqliteSaver` (`@langchain/langgraph-checkpoint-sqlite`) stored into
 * this package's tables, through {@link importCheckpoints}. The two may be the same file: the tables
 * differ, and LangChain's are only read.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { resolve } from "node:path";

import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { formatImportProgress, formatImportResult, importCheckpoints, parseCommandLine, processOutput, ResumableError, type CliOutput } from "@resumable/core";

import { loadDriver } from "./database.js";
import { SqliteSaver } from "./sqlite-saver.js";

const USAGE = `Usage: resumable-sqlite <command> [options]

Commands:
  import-langchain <langchain.sqlite> <resumable.sqlite> [--thread ID]...
      Copies every thread, checkpoint and pending write that LangChain's SqliteSaver
      (@langchain/langgraph-checkpoint-sqlite) stored in <langchain.sqlite> into
      @resumable/sqlite's tables in <resumable.sqlite> (created if missing; the same file
      is fine). LangChain's tables are only read. Running it again imports only what is new.
      --thread ID   import only this thread (repeat for several)
`;

export type { CliOutput };

/** Runs the CLI; resolves to the exit code (0 done, 1 failed, 2 usage). */
export async function main(argv: string[], output: CliOutput = processOutput): Promise<number> {
  const args = parseCommandLine(argv, { program: "resumable-sqlite", usage: USAGE, commands: ["import-langchain"], options: { thread: { type: "string", multiple: true } } }, output);
  if (typeof args === "number") return args;
  if (args.positionals.length !== 2) {
    output.err(`resumable-sqlite import-langchain: give the LangChain database and the target database\n\n${USAGE}`);
    return 2;
  }
  const [from, to] = args.positionals.map((p) => resolve(p)) as [string, string];
  try {
    return await importLangchain(from, to, args.values.thread, output);
  } catch (error) {
    output.err(`resumable-sqlite import-langchain: ${error instanceof ResumableError || error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

async function importLangchain(from: string, to: string, threads: string[] | undefined, output: CliOutput): Promise<number> {
  if (!existsSync(from)) {
    output.err(`resumable-sqlite import-langchain: ${from} does not exist; give the file LangChain's SqliteSaver wrote.`);
    return 1;
  }
  // Check for LangChain's tables without creating them (its saver would create empty ones).
  const Database = (await loadDriver()) as unknown as new (file: string, options: { readonly: boolean; fileMustExist: boolean }) => {
    prepare(sql: string): { all(): Array<{ name: string }> };
    close(): void;
  };
  const probe = new Database(from, { readonly: true, fileMustExist: true });
  let tables: string[];
  try {
    tables = probe.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('checkpoints', 'writes')`).all().map((r) => r.name);
  } finally {
    probe.close();
  }
  if (!tables.includes("checkpoints") || !tables.includes("writes")) {
    output.err(
      `resumable-sqlite import-langchain: ${from} has no LangChain checkpoint tables (checkpoints, writes); ` +
        `it was not written by @langchain/langgraph-checkpoint-sqlite.`,
    );
    return 1;
  }
  const source = await openLangchainSaver(from);
  const target = await SqliteSaver.connect(to);
  let lastLine = 0;
  try {
    output.out(`Importing LangChain's checkpoints from ${from} into ${to}`);
    const result = await importCheckpoints(source, target, {
      threadIds: threads,
      onProgress: (progress) => {
        if (progress.event !== "thread") return;
        // A line per thread, at most a few per second on large databases, and always the last one.
        const now = Date.now();
        if (now - lastLine < 250 && progress.threadsDone < progress.threadsTotal) return;
        lastLine = now;
        output.out(`  ${formatImportProgress(progress)}`);
      },
    });
    output.out(formatImportResult(result));
    return 0;
  } finally {
    await target.close();
    (source as BaseCheckpointSaver & { db?: { close(): void } }).db?.close();
  }
}

/** LangChain's SqliteSaver on the file, from the optional peer dependency. */
async function openLangchainSaver(file: string): Promise<BaseCheckpointSaver> {
  let mod: { SqliteSaver: { fromConnString(path: string): BaseCheckpointSaver } };
  try {
    // A computed specifier: the optional peer dependency need not be installed to build or load us.
    const name = "@langchain/langgraph-checkpoint-sqlite";
    mod = (await import(name)) as typeof mod;
  } catch (error) {
    throw new Error(
      `reading LangChain's database needs its saver: npm install @langchain/langgraph-checkpoint-sqlite ` +
        `(${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
  return mod.SqliteSaver.fromConnString(file);
}
