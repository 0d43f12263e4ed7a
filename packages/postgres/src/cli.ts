/**
 * `resumable-postgres`: command-line tools for `@resumable/postgres`.
 *
 * `resumable-postgres import-langchain [<source-url> [<target-url>]] [--source-schema NAME]
 * [--schema NAME] [--thread ID]...` copies every thread that LangChain's `PostgresSaver`
 * (`@langchain/langgraph-checkpoint-postgres`) stored into this package's tables, through
 * {@link importCheckpoints}. Source and target may be the same database and schema: the tables differ,
 * and LangChain's are only read.
 *
 * @module
 */
import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { formatImportProgress, formatImportResult, importCheckpoints, parseCommandLine, processOutput, type CliOutput } from "@resumable/core";

import { PostgresSaver } from "./postgres-saver.js";

const USAGE = `Usage: resumable-postgres <command> [options]

Commands:
  import-langchain [<source-url> [<target-url>]] [--source-schema NAME] [--schema NAME] [--thread ID]...
      Copies every thread, checkpoint and pending write that LangChain's PostgresSaver
      (@langchain/langgraph-checkpoint-postgres) stored in <source-url> (schema
      --source-schema, default "public") into @resumable/postgres's tables in <target-url>
      (default: the same database; schema --schema, default "public"; migrated first).
      LangChain's tables are only read. Running it again imports only what is new.
      The URLs default to $DATABASE_URL.
      --thread ID   import only this thread (repeat for several)
`;

export type { CliOutput };

/** Runs the CLI; resolves to the exit code (0 done, 1 failed, 2 usage). */
export async function main(argv: string[], output: CliOutput = processOutput): Promise<number> {
  const args = parseCommandLine(
    argv,
    {
      program: "resumable-postgres",
      usage: USAGE,
      commands: ["import-langchain"],
      options: { "source-schema": { type: "string" }, schema: { type: "string" }, thread: { type: "string", multiple: true } },
    },
    output,
  );
  if (typeof args === "number") return args;
  if (args.positionals.length > 2) {
    output.err(`resumable-postgres import-langchain: at most two URLs, the source and the target\n\n${USAGE}`);
    return 2;
  }
  const from = args.positionals[0] ?? process.env.DATABASE_URL;
  const to = args.positionals[1] ?? from;
  if (!from || !to) {
    output.err(`resumable-postgres import-langchain: no database URL; pass one, or set DATABASE_URL\n\n${USAGE}`);
    return 2;
  }
  const sourceSchema = args.values["source-schema"] ?? "public";
  const schema = args.values.schema ?? "public";
  try {
    return await importLangchain({ from, to, sourceSchema, schema, threads: args.values.thread }, output);
  } catch (error) {
    output.err(`resumable-postgres import-langchain: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}

interface ImportArgs {
  from: string;
  to: string;
  sourceSchema: string;
  schema: string;
  threads: string[] | undefined;
}

async function importLangchain({ from, to, sourceSchema, schema, threads }: ImportArgs, output: CliOutput): Promise<number> {
  const source = await openLangchainSaver(from, sourceSchema);
  try {
    try {
      // Never LangChain's setup() here: it would create (empty) tables in the source.
      for await (const _ of source.list({ configurable: {} }, { limit: 1 })) break;
    } catch (error) {
      if ((error as { code?: unknown }).code === "42P01") {
        output.err(
          `resumable-postgres import-langchain: schema "${sourceSchema}" of ${redact(from)} has no LangChain checkpoint tables ` +
            `(checkpoints, checkpoint_blobs, checkpoint_writes); pass --source-schema if LangChain's PostgresSaver used another.`,
        );
        return 1;
      }
      throw error;
    }
    const target = await PostgresSaver.connect(to, { schema, pool: { max: 4 } });
    let lastLine = 0;
    try {
      output.out(`Importing LangChain's checkpoints from ${redact(from)} (schema "${sourceSchema}") into ${redact(to)} (schema "${schema}")`);
      const result = await importCheckpoints(source, target, {
        threadIds: threads,
        onProgress: (progress) => {
          if (progress.event !== "thread") return;
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
    }
  } finally {
    await (source as BaseCheckpointSaver & { end(): Promise<void> }).end();
  }
}

/** LangChain's PostgresSaver, from the optional peer dependency. */
async function openLangchainSaver(url: string, schema: string): Promise<BaseCheckpointSaver> {
  let mod: { PostgresSaver: { fromConnString(url: string, options: { schema: string }): BaseCheckpointSaver } };
  try {
    // A computed specifier: the optional peer dependency need not be installed to build or load us.
    const name = "@langchain/langgraph-checkpoint-postgres";
    mod = (await import(name)) as typeof mod;
  } catch (error) {
    throw new Error(
      `reading LangChain's tables needs its saver: npm install @langchain/langgraph-checkpoint-postgres ` +
        `(${error instanceof Error ? error.message : String(error)})`,
      { cause: error },
    );
  }
  return mod.PostgresSaver.fromConnString(url, { schema });
}

/** A URL for messages, without its password. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "the database URL";
  }
}
