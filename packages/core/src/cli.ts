/**
 * What the packages' command-line tools share: where they write, and reading `<command> [options]`
 * with the same answers to no command, `--help`, an unknown command and a bad option.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from "node:util";

/** The `options` of `parseArgs`. */
export type ParseArgsOptionsConfig = NonNullable<ParseArgsConfig["options"]>;

/** Where a CLI writes; the bin passes the process's streams, tests their own. */
export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

/** The process's stdout and stderr, a line at a time. */
export const processOutput: CliOutput = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

/** The values `parseArgs` returns for `options`. */
export type CommandValues<O extends ParseArgsOptionsConfig> = ReturnType<typeof parseArgs<{ args: string[]; allowPositionals: true; options: O }>>["values"];

/** A command line read by {@link parseCommandLine}. */
export interface CommandLine<O extends ParseArgsOptionsConfig> {
  command: string;
  values: CommandValues<O>;
  positionals: string[];
}

/** What a CLI accepts: see {@link parseCommandLine}. */
export interface CommandLineSpec<O extends ParseArgsOptionsConfig> {
  /** The program's name, at the start of every message: `resumable-sqlite`. */
  program: string;
  /** The usage text, printed for `--help` and after every usage error. */
  usage: string;
  /** The commands it knows. */
  commands: readonly string[];
  /** Its options (`--help`/`-h` is added). */
  options: O;
}

/**
 * Reads `argv` as `<command> [options] [positionals]`. Returns the exit code when the line needs no
 * more work: no command (usage on stderr, 2), `help`/`--help`/`-h` before or after the command (usage on
 * stdout, 0), an unknown command or an option `parseArgs` refuses (the reason and the usage on stderr, 2).
 * Otherwise the command, its option values and its positionals.
 */
export function parseCommandLine<O extends ParseArgsOptionsConfig>(argv: string[], spec: CommandLineSpec<O>, output: CliOutput): CommandLine<O> | number {
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    (command === undefined ? output.err : output.out)(spec.usage);
    return command === undefined ? 2 : 0;
  }
  if (!spec.commands.includes(command)) {
    output.err(`${spec.program}: unknown command ${JSON.stringify(command)}\n\n${spec.usage}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, options: { ...spec.options, help: { type: "boolean", short: "h" } } });
  } catch (error) {
    output.err(`${spec.program}: ${(error as Error).message}\n\n${spec.usage}`);
    return 2;
  }
  if ((parsed.values as { help?: boolean }).help) {
    output.out(spec.usage);
    return 0;
  }
  return { command, values: parsed.values as CommandValues<O>, positionals: parsed.positionals };
}
