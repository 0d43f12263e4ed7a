/** Writes a run's JSON, Markdown report and SVG charts. @module */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { growthChart, latencyChart, readsChart } from "./charts.js";
import { renderReport } from "./report.js";
import type { BenchResults } from "./results.js";

/** Paths of the files written. */
export interface WrittenFiles {
  json: string;
  markdown: string;
  charts: string[];
}

/** Writes `<name>.json`, `<name>.md` and `<name>-{growth,latency,reads}.svg` into `outDir`. */
export async function writeResults(results: BenchResults, outDir: string): Promise<WrittenFiles> {
  mkdirSync(outDir, { recursive: true });
  const charts: { growth?: string; latency?: string; reads?: string } = {};
  const written: string[] = [];
  const jobs: Array<[keyof typeof charts, boolean, () => Promise<string>]> = [
    ["growth", results.growth.length > 0, () => growthChart(results)],
    ["latency", results.latency.length > 0, () => latencyChart(results)],
    ["reads", results.reads.length > 0, () => readsChart(results)],
  ];
  for (const [kind, hasData, draw] of jobs) {
    if (!hasData) continue;
    const file = `${results.name}-${kind}.svg`;
    writeFileSync(join(outDir, file), await draw());
    charts[kind] = file;
    written.push(join(outDir, file));
  }
  const json = join(outDir, `${results.name}.json`);
  writeFileSync(json, `${JSON.stringify(results, null, 2)}\n`);
  const markdown = join(outDir, `${results.name}.md`);
  writeFileSync(markdown, renderReport(results, charts));
  return { json, markdown, charts: written };
}
