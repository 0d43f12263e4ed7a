/**
 * SVG charts of a run, drawn with Vega-Lite and rendered headless by Vega (`view.toSVG()`, no canvas,
 * no browser, no native dependency).
 *
 * @module
 */
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";
import { STATE_LABEL } from "./graphs.js";
import type { BenchResults } from "./results.js";

async function render(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function labelOf(results: BenchResults): (id: string) => string {
  const labels = new Map(results.backends.map((b) => [b.id, b.label]));
  return (id) => labels.get(id) ?? id;
}


/** Bytes stored against thread length, one line per backend, the raw message bytes as the floor. */
export async function growthChart(results: BenchResults): Promise<string> {
  const label = labelOf(results);
  const values: Array<Record<string, unknown>> = [];
  for (const g of results.growth.filter((p) => !p.estimated)) {
    values.push({ series: label(g.backend), state: STATE_LABEL[g.state], turns: g.turns, bytes: g.logicalBytes, measure: "logical (rows)" });
    if (g.physicalBytes !== null) {
      values.push({ series: label(g.backend), state: STATE_LABEL[g.state], turns: g.turns, bytes: g.physicalBytes, measure: "physical (on disk)" });
    }
  }
  const raw: Array<Record<string, unknown>> = [];
  const seen = new Set<string>();
  for (const g of results.growth.filter((p) => !p.estimated)) {
    const key = `${g.state}:${g.turns}`;
    if (seen.has(key)) continue;
    seen.add(key);
    for (const measure of ["logical (rows)", "physical (on disk)"]) {
      raw.push({ series: "raw messages (floor)", state: STATE_LABEL[g.state], turns: g.turns, bytes: g.rawBytes, measure });
    }
  }
  return render({
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "Bytes stored as a chat thread grows (2 KB user + 2 KB assistant per turn, durability sync)",
      subtitle: "Dashed black line: the raw message bytes, the floor. In-memory savers have no physical size.",
      fontSize: 14,
    },
    data: { values: [...values, ...raw] },
    facet: {
      row: { field: "measure", type: "nominal", title: null },
      column: { field: "state", type: "nominal", title: null, sort: Object.values(STATE_LABEL) },
    },
    spec: {
      width: 300,
      height: 230,
      encoding: {
        x: { field: "turns", type: "quantitative", title: "turns", axis: { format: "d" } },
        y: { field: "bytes", type: "quantitative", title: "bytes (log scale)", scale: { type: "log" }, axis: { format: "~s" } },
      },
      layer: [
        {
          transform: [{ filter: "datum.series !== 'raw messages (floor)'" }],
          mark: { type: "line", point: true },
          encoding: { color: { field: "series", type: "nominal", title: "saver", legend: { labelLimit: 400 } } },
        },
        {
          transform: [{ filter: "datum.series === 'raw messages (floor)'" }],
          mark: { type: "line", color: "black", strokeDash: [5, 4] },
        },
      ],
    },
  } as TopLevelSpec);
}

/** Time per step by durability mode and backend, median with the p25-p75 spread. */
export async function latencyChart(results: BenchResults): Promise<string> {
  const label = labelOf(results);
  const values = results.latency.map((l) => ({
    series: label(l.backend),
    state: `${l.stateBytes / 1024} KB state`,
    durability: l.durability,
    median: l.perStepMs.median,
    p25: l.perStepMs.p25,
    p75: l.perStepMs.p75,
  }));
  const baseline = results.latency.map((l) => ({ state: `${l.stateBytes / 1024} KB state`, durability: l.durability, ms: l.baselinePerStepMs.median }));
  const runtime = baseline.length > 0 ? baseline.map((b) => b.ms).sort((a, b) => a - b)[Math.floor(baseline.length / 2)]! : 0;
  return render({
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "Time per step, 20-node chain (median, bar = p25–p75)",
      subtitle: `LangGraph alone, no checkpointer: about ${runtime.toFixed(2)} ms per step (dashed line)`,
      fontSize: 14,
    },
    data: { values },
    facet: { column: { field: "state", type: "nominal", title: null } },
    spec: {
      width: 360,
      height: 240,
      layer: [
        {
          mark: "bar",
          encoding: {
            x: { field: "durability", type: "nominal", sort: ["exit", "async", "sync"], title: "durability" },
            xOffset: { field: "series", type: "nominal" },
            y: { field: "median", type: "quantitative", title: "ms per step" },
            color: { field: "series", type: "nominal", title: "saver", legend: { labelLimit: 400 } },
          },
        },
        {
          mark: { type: "rule", color: "black" },
          encoding: {
            x: { field: "durability", type: "nominal", sort: ["exit", "async", "sync"] },
            xOffset: { field: "series", type: "nominal" },
            y: { field: "p25", type: "quantitative" },
            y2: { field: "p75" },
          },
        },
        {
          mark: { type: "rule", strokeDash: [4, 3], color: "gray" },
          encoding: { y: { datum: runtime, type: "quantitative" } },
        },
      ],
    },
  } as TopLevelSpec);
}

/** getState latency against thread depth on the DeltaChannel threads. */
export async function readsChart(results: BenchResults): Promise<string> {
  const label = labelOf(results);
  const values = results.reads.map((r) => ({
    series: label(r.backend),
    state: STATE_LABEL[r.state],
    depth: r.depth,
    ms: r.latencyMs.median,
    roundTrips: r.roundTrips ?? "n/a",
  }));
  return render({
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: "getState on a DeltaChannel thread (median)", fontSize: 14 },
    data: { values },
    facet: { column: { field: "state", type: "nominal", title: null } },
    spec: {
      width: 340,
      height: 240,
      mark: { type: "line", point: true },
      encoding: {
        x: { field: "depth", type: "quantitative", title: "thread depth (turns)", axis: { format: "d" } },
        y: { field: "ms", type: "quantitative", title: "ms per getState", scale: { type: "log" } },
        color: { field: "series", type: "nominal", title: "saver", legend: { labelLimit: 400 } },
      },
    },
  } as TopLevelSpec);
}
