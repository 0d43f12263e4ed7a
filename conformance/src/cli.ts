#!/usr/bin/env node
/**
 * `resumable-conformance <module> [--json out.json] [--only a,b] [--no-langchain] [--quick] [--no-crash]`
 *
 * Loads a module whose default export is a factory (or `{ name, create, teardown }`), runs the
 * contract categories, LangChain's validation suite and the crash-injection suite on it, prints a
 * report and exits non-zero when anything failed. TypeScript modules are loaded through tsx.
 *
 * @module
 */
import { writeFileSync } from "node:fs";
import { dirname, extname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { runLangchainSection } from "./langchain-section.js";
import { crashSection } from "./crash-section.js";
import { EXTRA_SECTIONS } from "./sections.js";
import { formatReport } from "./report.js";
import { buildReport, runContractSection, selectCategories } from "./runner.js";
import { probeSubject, toTarget } from "./subject.js";
import type { ConformanceTarget, ReportSection, SubjectInfo } from "./types.js";

// The bin is the ESM build; the CommonJS build compiles this file too, where `import.meta` is not
// allowed, and never runs it.
// @ts-ignore
const here: string = import.meta.url;

const USAGE = `Usage: resumable-conformance <module> [options]

  <module>             a .js/.mjs/.ts/.mts file whose default export, called as ({ workDir }),
                       returns a CheckpointStore or BaseCheckpointSaver whose data lives in
                       workDir (a new, empty directory for each contract check; the same one for
                       every process of a crash job); or an object { name?, create, teardown? }
  --json <file>        also write the report as JSON
  --only <ids>         run only these contract categories (comma-separated ids)
  --no-langchain       skip LangChain's validation suite
  --quick              crash injection: sample kill points instead of killing after every command
  --no-crash           skip the crash-injection suite
  --crash-json <file>  also write the crash matrix (graph x mode x kill point) as JSON
`;


async function loadModule(path: string): Promise<unknown> {
  const url = pathToFileURL(path).href;
  if ([".ts", ".mts", ".cts", ".tsx"].includes(extname(path))) {
    // A computed specifier: the CommonJS build's resolution cannot see tsx's export map.
    const api = "tsx/esm/api";
    const { tsImport } = (await import(api)) as { tsImport(specifier: string, parent: string): Promise<unknown> };
    return tsImport(url, here);
  }
  return import(url);
}

/** Runs the CLI; returns the exit code (0 passed, 1 failed, 2 usage or load error). */
export async function main(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: "string" },
        only: { type: "string" },
        "no-langchain": { type: "boolean" },
        quick: { type: "boolean" },
        "no-crash": { type: "boolean" },
        "crash-json": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.positionals.length !== 1) {
    process.stderr.write(USAGE);
    return 2;
  }
  const modulePath = resolve(args.positionals[0]!);
  let categories: string[] | undefined;
  try {
    categories = args.values.only?.split(",").map((s) => s.trim()).filter(Boolean);
    selectCategories(categories);
  } catch (error) {
    process.stderr.write(`resumable-conformance: ${(error as Error).message}\n`);
    return 2;
  }
  let target: ConformanceTarget;
  let info: SubjectInfo;
  try {
    target = toTarget(await loadModule(modulePath), modulePath);
    info = await probeSubject(target);
  } catch (error) {
    process.stderr.write(`resumable-conformance: cannot use ${modulePath}: ${(error as Error)?.stack ?? String(error)}\n`);
    return 2;
  }
  const started = performance.now();
  const startedAt = new Date().toISOString();
  process.stderr.write(`Running the conformance suite on ${info.name} (${modulePath})\n`);
  const sections: ReportSection[] = [];
  sections.push(
    await runContractSection(target, info, {
      categories,
      onCheck: (category, result) => process.stderr.write(`  ${result.status === "passed" ? "✓" : result.status === "failed" ? "✗" : "-"} ${category.id} › ${result.name}\n`),
    }),
  );
  if (args.values["no-langchain"]) {
    sections.push({ id: "langchain", title: "LangChain validation suite", status: "skipped", reason: "--no-langchain was given", categories: [] });
  } else {
    process.stderr.write("  … LangChain validation suite\n");
    sections.push(await runLangchainSection(modulePath, info.name, dirname(fileURLToPath(here))));
  }
  for (const extra of EXTRA_SECTIONS) sections.push(await extra.run({ modulePath, target, info }));
  if (args.values["no-crash"]) {
    sections.push({ id: "crash", title: "Crash injection", status: "skipped", reason: "--no-crash was given", categories: [] });
  } else {
    const crashJson = args.values["crash-json"];
    sections.push(await crashSection({ quick: args.values.quick ?? false, jsonPath: crashJson ? resolve(crashJson) : undefined }).run({ modulePath, target, info }));
  }
  const report = buildReport(info, sections, startedAt, started);
  process.stdout.write(`\n${formatReport(report)}\n`);
  if (args.values.json) writeFileSync(resolve(args.values.json), `${JSON.stringify(report, null, 2)}\n`);
  return report.status === "passed" ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`resumable-conformance: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(2);
  },
);
