#!/usr/bin/env node
// Builds the package in the current directory to dist/esm and dist/cjs with type declarations
// (`--esm-only`: dist/esm alone, for a package whose dependencies are ESM-only).
// Two tsc passes keep the toolchain to TypeScript alone; verbatimModuleSyntax is turned off for the
// CommonJS pass because it forbids ESM syntax in a CommonJS emit.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const tsc = require.resolve("typescript/bin/tsc");
const cwd = process.cwd();
rmSync(join(cwd, "dist"), { recursive: true, force: true });
const run = (args) => execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json", ...args], { stdio: "inherit", cwd });
run(["--outDir", "dist/esm"]);
writeFileSync(join(cwd, "dist/esm/package.json"), JSON.stringify({ type: "module" }) + "\n");
if (!process.argv.includes("--esm-only")) {
  run(["--outDir", "dist/cjs", "--module", "commonjs", "--moduleResolution", "node10", "--verbatimModuleSyntax", "false"]);
  mkdirSync(join(cwd, "dist/cjs"), { recursive: true });
  writeFileSync(join(cwd, "dist/cjs/package.json"), JSON.stringify({ type: "commonjs" }) + "\n");
}
