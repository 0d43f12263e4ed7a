/** What machine and which versions a run measured. @module */
import { readFileSync } from "node:fs";
import { cpus, freemem, loadavg, release, totalmem, type as osType } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = join(dirname(fileURLToPath(import.meta.url)), "..");

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(benchDir, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "?";
  }
}

/** CPU, memory, OS, Node and the versions of LangGraph and the drivers. */
export function machineInfo(): Record<string, string> {
  const cpu = cpus();
  return {
    cpu: `${cpu[0]?.model ?? "?"} × ${cpu.length}`,
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB (${(freemem() / 2 ** 30).toFixed(1)} GiB free at start)`,
    loadAverageAtStart: loadavg().map((l) => l.toFixed(2)).join(" "),
    os: `${osType()} ${release()}`,
    node: process.version,
    "@langchain/langgraph": versionOf("@langchain/langgraph"),
    "@langchain/langgraph-checkpoint": versionOf("@langchain/langgraph-checkpoint"),
    "@langchain/langgraph-checkpoint-sqlite": versionOf("@langchain/langgraph-checkpoint-sqlite"),
    "@langchain/langgraph-checkpoint-postgres": versionOf("@langchain/langgraph-checkpoint-postgres"),
    "better-sqlite3": versionOf("better-sqlite3"),
    pg: versionOf("pg"),
  };
}
