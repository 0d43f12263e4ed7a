import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

it("finds the waiting refunds, applies each answer once, and lists the one left", () => {
  // As a user runs it: a process of its own.
  const run = spawnSync(process.execPath, ["--conditions=dev-source", "--import", "tsx", "src/demo.ts"], { cwd: root, encoding: "utf8", timeout: 110_000 });
  const output = `${run.stdout}\n${run.stderr}`;
  expect(run.status, output).toBe(0);
  expect(output).toMatch(/recovery runner: refund-A-1005 → interrupted/);
  expect(output).toMatch(/Review queue \(5 waiting\):\n {2}refund-A-1001: Refund 42 EUR to Ana\?\n(.*\n){3} {2}refund-A-1005: Refund 75 EUR to Eli\?/);
  expect(output).toMatch(/refund-A-1003: rejected \(answered\); no charge; e-mail: "We could not refund order A-1003/);
  expect(output).toMatch(/a second answer to refund-A-1001 \(Sam, a moment later\): not-waiting/);
  expect(output).toMatch(/cards charged: 3 \(A-1001: 42 EUR; A-1002: 18 EUR; A-1005: 75 EUR\); e-mails sent: 4/);
  expect(output).toMatch(/Interrupted, waiting for a person: 1\n.*\n {2}refund-A-1004 +interrupted/);
  expect(output).toMatch(/Unfinished \(pending, failed\): 0/);
});
