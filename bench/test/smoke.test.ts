import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli.js";
import { quickConfig, type BenchConfig } from "../src/config.js";
import { writeResults, type WrittenFiles } from "../src/output.js";
import type { BenchResults } from "../src/results.js";
import { runBenchmark } from "../src/run.js";

// The whole benchmark at tiny sizes on the embedded backends: checks that every output is written
// and every figure is sane. Never a timing assertion: only signs, counts and byte floors.
function tinyConfig(): BenchConfig {
  const config = quickConfig("smoke");
  config.growthTurns = [4];
  config.curveTurns = [2];
  config.plainMaxTurns = 4;
  config.readDepths = [4];
  config.pruneKeepLast = 3;
  config.readReps = 2;
  config.latency = { stateBytes: [1024], modes: ["exit", "async", "sync"], warmup: 1, reps: 2, floorOps: 5 };
  config.ops = { count: 10, reps: 1, valueBytes: 256 };
  return config;
}

describe("pnpm bench at tiny sizes", () => {
  let outDir: string;
  let results: BenchResults;
  let files: WrittenFiles;
  const embedded = ["resumable-memory", "langchain-memory", "resumable-sqlite", "langchain-sqlite"];

  beforeAll(async () => {
    outDir = mkdtempSync(join(tmpdir(), "resumable-bench-smoke-"));
    results = await runBenchmark(tinyConfig());
    files = await writeResults(results, outDir);
  }, 300_000);

  afterAll(() => {
    rmSync(outDir, { recursive: true, force: true });
  });

  it("runs every embedded backend without errors", () => {
    expect(results.errors).toEqual([]);
    for (const id of embedded) expect(results.backends.find((b) => b.id === id)?.status, id).toBe("ran");
    expect(results.backends.find((b) => b.id === "langchain-postgres")?.status).toBe("not selected");
  });

  it("writes the JSON, the Markdown report and the SVG charts", () => {
    const json = JSON.parse(readFileSync(files.json, "utf8")) as BenchResults;
    expect(json.name).toBe("smoke");
    expect(json.growth.length).toBe(results.growth.length);
    const markdown = readFileSync(files.markdown, "utf8");
    for (const heading of ["## Targets", "## Growth", "## Reads", "## Step latency", "## Operations per second", "## Machine", "## How it was measured"]) {
      expect(markdown).toContain(heading);
    }
    expect(markdown).toContain("| Saver | put: WAL pages | putWrites: WAL pages |");
    expect(files.charts.map((c) => c.slice(outDir.length + 1)).sort()).toEqual(["smoke-growth.svg", "smoke-latency.svg", "smoke-reads.svg"]);
    for (const chart of files.charts) {
      expect(existsSync(chart)).toBe(true);
      const svg = readFileSync(chart, "utf8");
      expect(svg.startsWith("<svg")).toBe(true);
      expect(markdown).toContain(`](${chart.slice(outDir.length + 1)})`);
    }
  });

  it("measures bytes from the database: at least the raw messages, physical where there is a file", () => {
    for (const id of embedded) {
      for (const state of ["plain", "delta", "delta-nosnap"] as const) {
        const points = results.growth.filter((g) => g.backend === id && g.state === state);
        expect(points.map((p) => p.turns), `${id} ${state}`).toEqual([2, 4]);
        for (const point of points) {
          expect(point.rawBytes).toBe(point.turns * 2 * 2048);
          expect(point.logicalBytes, `${id} ${state} logical`).toBeGreaterThan(point.rawBytes);
          if (id.endsWith("sqlite")) expect(point.physicalBytes, `${id} ${state} physical`).toBeGreaterThan(point.rawBytes);
          else expect(point.physicalBytes).toBeNull();
        }
        expect(points[1]!.logicalBytes).toBeGreaterThan(points[0]!.logicalBytes);
        // A second thread's bytes on disk: ours, plain reducer, where there is a file.
        for (const point of points) {
          if (state === "plain" && id === "resumable-sqlite") expect(point.nextThreadPhysicalBytes, `${id} next thread`).toBeGreaterThan(point.rawBytes);
          else expect(point.nextThreadPhysicalBytes, `${id} ${state} next thread`).toBeUndefined();
        }
      }
      const at4 = (state: string) => results.growth.find((g) => g.backend === id && g.state === state && g.turns === 4)!.logicalBytes;
      // LangChain re-serializes the whole list at every step, which costs more than storing deltas even
      // at 4 turns; ours stores a plain list as deltas too, so the two cost about the same.
      if (id.startsWith("langchain")) expect(at4("plain"), id).toBeGreaterThan(at4("delta"));
      else expect(at4("plain"), id).toBeLessThan(1.2 * at4("delta"));
    }
  });

  it("rebuilds the DeltaChannel thread on read and counts round trips where there is a database", () => {
    for (const id of embedded) {
      for (const state of ["delta", "delta-nosnap"] as const) {
        const read = results.reads.find((r) => r.backend === id && r.state === state);
        expect(read?.messages, `${id} ${state}`).toBe(8);
        expect(read!.latencyMs.median).toBeGreaterThan(0);
        if (id.endsWith("sqlite")) expect(read!.roundTrips, id).toBeGreaterThan(0);
      }
    }
    expect(results.reads.find((r) => r.backend === "langchain-memory")?.roundTrips).toBeNull();
  });

  it("prunes the longest thread of each kind on our savers: fewer bytes where no DeltaChannel needs the history, the state kept whole", () => {
    for (const id of ["resumable-memory", "resumable-sqlite"]) {
      for (const state of ["plain", "delta", "delta-nosnap"] as const) {
        const point = results.prune?.find((p) => p.backend === id && p.state === state);
        expect(point, `${id} ${state}`).toBeDefined();
        expect(point!.keepLast).toBe(3);
        expect(point!.messagesAfter, `${id} ${state}: messages getState returns after the prune`).toBe(point!.messagesBefore);
        expect(point!.messagesBefore).toBe(2 * point!.turns);
        if (state !== "plain") {
          // No snapshot in these few turns (the default cadence snapshots every 100 updates): every
          // checkpoint is history the newest ones replay, and stays.
          expect(point!.removed.checkpoints, `${id} ${state}`).toBe(0);
          expect(point!.removed.keptForHistory, `${id} ${state}`).toBeGreaterThan(0);
          expect(point!.after.logicalBytes).toBe(point!.before.logicalBytes);
        } else {
          expect(point!.removed.checkpoints, `${id} ${state}`).toBeGreaterThan(0);
          expect(point!.after.logicalBytes, `${id} ${state}`).toBeLessThan(point!.before.logicalBytes);
        }
      }
    }
    expect(results.prune?.some((p) => p.backend.startsWith("langchain"))).toBe(false);
    expect(readFileSync(files.markdown, "utf8")).toMatch(/## Retention: bytes before and after `prune\(\{ keepLast: 3 \}\)`/);
  });

  it("reports step latency, the saver's share and the floor for every mode", () => {
    for (const id of embedded) {
      const points = results.latency.filter((l) => l.backend === id);
      expect(points.map((p) => p.durability).sort(), id).toEqual(["async", "exit", "sync"]);
      for (const point of points) {
        expect(point.perStepMs.n).toBe(2);
        expect(point.perStepMs.median).toBeGreaterThan(0);
        expect(point.baselinePerStepMs.median).toBeGreaterThan(0);
        expect(Number.isFinite(point.saverShareMs.median)).toBe(true);
        if (id.endsWith("sqlite")) {
          expect(point.floorMs!.median).toBeGreaterThan(0);
          expect(point.writeFloorMs!.median).toBeGreaterThan(0);
          expect(Number.isFinite(point.shareOverFloor!.median)).toBe(true);
        } else {
          expect(point.floorMs).toBeNull();
        }
      }
    }
  });

  it("reports operations per second and checks every target", () => {
    for (const id of embedded) {
      for (const op of ["put", "putWrites", "getTuple"]) {
        expect(results.ops.find((o) => o.backend === id && o.op === op)?.perSecond.median, `${id} ${op}`).toBeGreaterThan(0);
      }
    }
    // SQLite savers report the pages each commit writes to the WAL: at least one (the table's leaf).
    for (const id of ["resumable-sqlite", "langchain-sqlite", "resumable-sqlite-normal", "langchain-sqlite-full"]) {
      for (const op of ["put", "putWrites"]) {
        expect(results.ops.find((o) => o.backend === id && o.op === op)?.walPagesPerCall, `${id} ${op}`).toBeGreaterThanOrEqual(1);
      }
    }
    expect(results.ops.some((o) => o.backend.endsWith("memory") && o.walPagesPerCall !== undefined)).toBe(false);
    // Durability variants take part in latency and operations only (storage does not depend on the setting).
    for (const id of ["resumable-sqlite-normal", "langchain-sqlite-full"]) {
      expect(results.ops.filter((o) => o.backend === id).length, id).toBe(3);
      expect(results.latency.filter((l) => l.backend === id).length, id).toBe(3);
      expect(results.growth.filter((g) => g.backend === id).length, id).toBe(0);
    }
    const targets = results.targets.map((t) => `${t.backend}: ${t.target}`);
    expect(targets).toContain("resumable-sqlite-normal: put / s at least LangChain's (langchain-sqlite)");
    expect(targets).toContain("resumable-sqlite: put / s at least LangChain's (langchain-sqlite-full)");
    expect(targets).toContain("resumable-sqlite: DeltaChannel, 4 turns: ≤ 1.5× raw and smaller than LangChain's");
    expect(targets).toContain("resumable-sqlite: getState, 4-turn DeltaChannel thread: no slower than LangChain's");
    expect(targets.some((t) => t.startsWith("resumable-sqlite: plain reducer, "))).toBe(true);
  });
});

describe("command line", () => {
  it("defaults to a quick pass on the embedded backends", () => {
    const options = parseArgs([]);
    expect(options).not.toBe("help");
    if (options === "help") return;
    expect(options.config.preset).toBe("quick");
    expect(options.config.backends).toBe("embedded");
    expect(options.config.growthTurns).toEqual([50]);
  });

  it("takes --backends all, --full and --name, after pnpm's `--`", () => {
    const options = parseArgs(["--", "--full", "--backends", "all", "--name", "full-test"]);
    if (options === "help") throw new Error("unexpected help");
    expect(options.config.growthTurns).toEqual([50, 200, 1000]);
    expect(options.config.backends).toBe("all");
    expect(options.config.name).toBe("full-test");
  });

  it("takes --phases to run only some phases, and rejects an unknown one", () => {
    const options = parseArgs(["--full", "--phases", "growth"]);
    if (options === "help") throw new Error("unexpected help");
    expect(options.config.phases).toEqual(["growth"]);
    expect(options.config.preset).toBe("custom");
    expect(() => parseArgs(["--phases", "growth,speed"])).toThrow(/--phases: unknown phase "speed"/);
  });

  it("rejects an unknown option with the usage", () => {
    expect(() => parseArgs(["--fast"])).toThrow(/unknown option "--fast"[\s\S]*Usage: pnpm bench/);
  });
});
