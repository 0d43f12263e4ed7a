/**
 * `pnpm bench`: runs the benchmark and writes `bench/results/<name>.{json,md}` and SVG charts.
 *
 * ```
 * pnpm bench                              quick pass, embedded backends
 * pnpm bench --backends all               every backend whose server is available
 * pnpm bench --full --name full-2026-11-29
 * ```
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { fullConfig, quickConfig, type BenchConfig } from "./config.js";
import { writeResults } from "./output.js";
import { stopAllBenchPostgres } from "./postgres-server.js";
import { STATE_LABEL } from "./graphs.js";
import { formatBytes } from "./report.js";
import type { BenchResults } from "./results.js";
import { checkTargets, runBenchmark, type ProgressListener } from "./run.js";

const USAGE = `Usage: pnpm bench [options]

  --full                 50, 200 and 1000 turns, more repetitions, every backend (default: quick, embedded)
  --backends LIST        embedded | all | comma-separated ids (e.g. resumable-sqlite,langchain-sqlite)
  --name NAME            result file name (default: <preset>-<date>)
  --out DIR              output directory (default: bench/results)
  --turns LIST           thread lengths for growth and reads (e.g. 50,200)
  --reps N               repetitions of latency and read measurements
  --phases LIST          only these phases: growth (bytes and reads), latency (steps), ops (direct calls)
  --render FILE.json     rewrite the report and charts of an earlier run (into --out, as --name), run nothing
  --help                 this text
`;

/** Parsed command line. */
export interface CliOptions {
  config: BenchConfig;
  outDir: string;
  /** Re-render this earlier run instead of running. */
  render?: string;
  /** With {@link render}: the name to write it under (`--name`). */
  renameTo?: string;
}

/** Parses the arguments of `pnpm bench`; throws with the usage on a bad one. */
export function parseArgs(argv: readonly string[]): CliOptions | "help" {
  const args = argv.filter((a) => a !== "--");
  const date = new Date().toISOString().slice(0, 10);
  let preset: "quick" | "full" = "quick";
  const overrides: { backends?: BenchConfig["backends"]; name?: string; turns?: number[]; reps?: number; phases?: BenchConfig["phases"] } = {};
  let outDir = join(dirname(fileURLToPath(import.meta.url)), "..", "results");
  let render: string | undefined;
  const value = (i: number, flag: string) => {
    const v = args[i + 1];
    if (v === undefined || v.startsWith("--")) throw new Error(`${flag} needs a value\n\n${USAGE}`);
    return v;
  };
  const numbers = (text: string, flag: string) => {
    const list = text.split(",").map(Number);
    if (list.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`${flag} takes positive integers, got "${text}"`);
    return list;
  };
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    switch (arg) {
      case "--help":
      case "-h":
        return "help";
      case "--full":
        preset = "full";
        break;
      case "--quick":
        preset = "quick";
        break;
      case "--backends": {
        const v = value(i++, arg);
        overrides.backends = v === "all" || v === "embedded" ? v : v.split(",");
        break;
      }
      case "--name":
        overrides.name = value(i++, arg);
        break;
      case "--out":
        outDir = resolve(value(i++, arg));
        break;
      case "--turns":
        overrides.turns = numbers(value(i++, arg), arg);
        break;
      case "--render":
        render = resolve(value(i++, arg));
        break;
      case "--phases": {
        const list = value(i++, arg).split(",").map((p) => p.trim());
        const known = ["growth", "latency", "ops"];
        const bad = list.filter((p) => !known.includes(p));
        if (bad.length > 0 || list.length === 0) throw new Error(`--phases: unknown phase ${bad.map((p) => `"${p}"`).join(", ") || "(none)"}; use ${known.join(", ")}\n\n${USAGE}`);
        overrides.phases = list as NonNullable<BenchConfig["phases"]>;
        break;
      }
      case "--reps":
        overrides.reps = numbers(value(i++, arg), arg)[0];
        break;
      default:
        throw new Error(`unknown option "${arg}"\n\n${USAGE}`);
    }
  }
  const config = (preset === "full" ? fullConfig : quickConfig)(overrides.name ?? `${preset}-${date}`);
  if (overrides.backends) config.backends = overrides.backends;
  if (overrides.turns) {
    config.growthTurns = overrides.turns;
    config.readDepths = overrides.turns;
    config.plainMaxTurns = Math.min(config.plainMaxTurns, Math.max(...overrides.turns));
    config.preset = "custom";
  }
  if (overrides.phases) {
    config.phases = overrides.phases;
    config.preset = "custom";
  }
  if (overrides.reps) {
    config.latency.reps = overrides.reps;
    config.readReps = overrides.reps;
    config.preset = "custom";
  }
  return { config, outDir, ...(render ? { render } : {}), ...(render && overrides.name ? { renameTo: overrides.name } : {}) };
}

/** Progress on stderr: one line rewritten in place on a terminal, a line per change elsewhere. */
function progressPrinter(): ProgressListener & { done(): void } {
  const tty = process.stderr.isTTY;
  const started = Date.now();
  let last = "";
  let lastPrinted = 0;
  const listener = ((event) => {
    const seconds = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
    const line = `[${seconds}s] ${event.step}/${event.steps} ${event.phase} · ${event.backend} · ${event.detail}`;
    if (tty) {
      process.stderr.write(`\r\x1b[2K${line.slice(0, (process.stderr.columns ?? 120) - 1)}`);
    } else if (line !== last && (event.detail === "starting" || Date.now() - lastPrinted > 2000)) {
      process.stderr.write(`${line}\n`);
      lastPrinted = Date.now();
    }
    last = line;
  }) as ProgressListener & { done(): void };
  listener.done = () => {
    if (tty) process.stderr.write("\n");
  };
  return listener;
}

async function main(): Promise<void> {
  let options: CliOptions | "help";
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  if (options === "help") {
    process.stdout.write(USAGE);
    return;
  }
  const { config, outDir } = options;
  if (options.render) {
    const earlier = JSON.parse(readFileSync(options.render, "utf8")) as BenchResults;
    const name = options.renameTo ?? earlier.name;
    const files = await writeResults({ ...earlier, name, config: { ...earlier.config, name }, targets: checkTargets(earlier) }, outDir);
    process.stdout.write(`Wrote ${[files.json, files.markdown, ...files.charts].join("\n      ")}\n`);
    return;
  }
  // Ctrl-C must not leave the benchmark's own PostgreSQL server running.
  process.once("uncaughtException", (error) => {
    process.stderr.write(`\n${error.stack ?? String(error)}\nstopping servers\n`);
    void stopAllBenchPostgres().finally(() => process.exit(1));
  });
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      process.stderr.write(`\n${signal}: stopping servers\n`);
      void stopAllBenchPostgres().finally(() => process.exit(130));
    });
  }
  const printer = progressPrinter();
  process.stderr.write(`Benchmark "${config.name}" (${config.preset}), backends: ${Array.isArray(config.backends) ? config.backends.join(", ") : config.backends}\n`);
  const results = await runBenchmark(config, { onProgress: printer });
  printer.done();
  for (const backend of results.backends) {
    if (backend.status !== "ran" && backend.status !== "not selected") process.stderr.write(`  ${backend.label}: ${backend.status} — ${backend.reason ?? ""}\n`);
  }
  const files = await writeResults(results, outDir);
  const out: string[] = ["", "Targets (measured, not asserted):"];
  for (const t of results.targets) {
    const label = results.backends.find((b) => b.id === t.backend)?.label ?? t.backend;
    out.push(`  ${t.met === null ? "n/a" : t.met ? "met" : "NOT met"}  ${label}: ${t.target}: ${t.measured}`);
  }
  const deltas = results.growth.filter((g) => g.state !== "plain" && !g.estimated);
  if (deltas.length > 0) {
    out.push("", "DeltaChannel growth at the longest thread:");
    const longest = Math.max(...deltas.map((g) => g.turns));
    for (const g of deltas.filter((d) => d.turns === longest)) {
      const label = results.backends.find((b) => b.id === g.backend)?.label ?? g.backend;
      out.push(`  ${label} (${STATE_LABEL[g.state]}): ${formatBytes(g.logicalBytes)} logical, ${formatBytes(g.physicalBytes)} physical for ${formatBytes(g.rawBytes)} of messages`);
    }
  }
  out.push("", `Wrote ${files.json}`, `      ${files.markdown}`, ...files.charts.map((c) => `      ${c}`));
  if (results.errors.length > 0) out.push("", `${results.errors.length} error(s): see the report.`);
  process.stdout.write(`${out.join("\n")}\n`);
  if (results.errors.length > 0) process.exitCode = 1;
}

// Run only as a program, not when the smoke test imports parseArgs.
if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  });
}
