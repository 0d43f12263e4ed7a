// better-sqlite3 installed without its native build (pnpm 10+ before `pnpm approve-builds`, or
// `npm install --ignore-scripts`): the real package's JavaScript and the real `bindings` lookup, from a
// copy that lacks build/. Opening a database must say what to run, not "Could not locate the bindings file".
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { ResumableError } from "@resumable/core";
import { afterAll, describe, expect, it, vi } from "vitest";

const unbuilt = await vi.hoisted(async () => {
  // vi.hoisted runs before the imports above, so it brings its own.
  const fs = await import("node:fs");
  const os = await import("node:os");
  const path = await import("node:path");
  const { createRequire } = await import("node:module");
  const require = createRequire(import.meta.url);
  const real = path.dirname(fs.realpathSync(require.resolve("better-sqlite3/package.json")));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "resumable-unbuilt-sqlite-"));
  const copy = path.join(root, "node_modules/better-sqlite3");
  fs.mkdirSync(copy, { recursive: true });
  fs.cpSync(path.join(real, "package.json"), path.join(copy, "package.json"));
  fs.cpSync(path.join(real, "lib"), path.join(copy, "lib"), { recursive: true });
  // Its JavaScript dependency, as installed next to it.
  const bindings = path.dirname(fs.realpathSync(createRequire(path.join(real, "package.json")).resolve("bindings/package.json")));
  fs.symlinkSync(bindings, path.join(root, "node_modules/bindings"), "dir");
  return { root, copy };
});

vi.mock("better-sqlite3", async () => {
  const { createRequire } = await import("node:module");
  return { default: createRequire(import.meta.url)(unbuilt.copy) };
});

const { SqliteDriverError, SqliteSaver, SqliteStore } = await import("../src/index.js");

const work = mkdtempSync(join(tmpdir(), "resumable-driver-errors-"));
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(unbuilt.root, { recursive: true, force: true });
});

describe("better-sqlite3 without its native addon", () => {
  it("the unbuilt copy fails as a real one does (the test's premise)", () => {
    const Database = createRequire(import.meta.url)(unbuilt.copy) as new (file: string) => unknown;
    expect(() => new Database(join(work, "raw.db"))).toThrow(/Could not locate the bindings file/);
  });

  it("connect() fails with a SqliteDriverError that says what to run for pnpm and for npm", async () => {
    const file = join(work, "agent.sqlite");
    const error = (await SqliteSaver.connect(file).then(
      () => undefined,
      (e: unknown) => e,
    )) as InstanceType<typeof SqliteDriverError>;
    expect(error.message).toMatch(/installed without its native addon/);
    expect(error.message).toContain(JSON.stringify(file));
    expect(error.message).toContain("pnpm approve-builds");
    expect(error.message).toContain("allowBuilds: { better-sqlite3: true }");
    expect(error.message).toContain("npm rebuild better-sqlite3");
    expect(error).toBeInstanceOf(SqliteDriverError);
    expect(error).toBeInstanceOf(ResumableError);
    expect(error.code).toBe("SQLITE_DRIVER_UNAVAILABLE");
    expect((error.cause as Error).message).toMatch(/Could not locate the bindings file/);
  });

  it("a store fails the same way at its first use, and again (not a cached half-open state) on the next", async () => {
    const store = new SqliteStore(join(work, "store.sqlite"));
    await expect(store.setup()).rejects.toThrow(/npm rebuild better-sqlite3/);
    await expect(store.getCheckpoint({ threadId: "t", checkpointNs: "" })).rejects.toThrow(/npm rebuild better-sqlite3/);
    await expect(store.setup()).rejects.toBeInstanceOf(SqliteDriverError);
    await store.close();
  });
});
