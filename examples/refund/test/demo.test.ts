import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startDisposablePostgres } from "@resumable/test-servers";
import { expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function expectChargedOnce(args: string[], env: NodeJS.ProcessEnv = process.env) {
  // Run as a user runs it: a process of its own, which starts two worker processes per mode.
  const run = spawnSync(process.execPath, ["--conditions=dev-source", "--import", "tsx", "src/demo.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    env,
    timeout: 170_000,
  });
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.status, output).toBe(0);
  for (const mode of ["exit", "async", "sync"]) {
    const section = output.split(`durability "${mode}"`)[1]?.split("── durability")[0] ?? "";
    expect(section, output).toMatch(/worker 1 \(pid \d+\): lookup → check_policy → approve .* → charge_card +✝ SIGKILL inside charge_card/);
    expect(section, output).toMatch(/checkpoints on disk at the kill: \d+/);
    expect(section, output).toMatch(/worker 2 \(pid \d+\): .*charge_card → email/);
    expect(section, output).toMatch(/without the idempotency key it would have been charged 2 times/);
    expect(section, output).toMatch(/^ {2}charged 1 time$/m);
  }
}

it("charges Ana's card once in every durability mode although worker 1 dies inside charge_card", () => {
  expectChargedOnce([]);
});

it("does the same on PostgreSQL with --backend postgres", async () => {
  const server = await startDisposablePostgres();
  try {
    expectChargedOnce(["--backend", "postgres"], { ...process.env, RESUMABLE_POSTGRES_URL: server.url });
  } finally {
    await server.stop();
  }
});

it("explains what a backend needs when it cannot run", () => {
  const run = spawnSync(process.execPath, ["--conditions=dev-source", "--import", "tsx", "src/demo.ts", "--backend", "postgres"], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, RESUMABLE_POSTGRES_URL: "", DATABASE_URL: "" },
    timeout: 60_000,
  });
  expect(run.status).toBe(2);
  expect(run.stderr).toMatch(/--backend postgres needs a server: set RESUMABLE_POSTGRES_URL/);
});
