/**
 * Builds the child process's entry: one ESM file with the child code, the store factory and every
 * TypeScript source they import (workspace packages through their `dev-source` condition), while
 * third-party packages stay external, imported by absolute path so that the child loads exactly the
 * files the factory would have loaded.
 *
 * Why a bundle: the sweep starts hundreds of processes, and a TypeScript loader hook (tsx) costs about
 * a second of CPU per process start on Node 20, more than the whole job. A bundle starts as fast as
 * plain Node.
 *
 * @module
 */
import { builtinModules } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Plugin } from "esbuild";

const TS_SOURCE = /\.(c|m)?tsx?$/;

const IN_NODE_MODULES = /[\\/]node_modules[\\/]/;

/** The package root of a resolved file inside node_modules, e.g. `.../node_modules/@scope/name`. */
function packageRoot(file: string): string | undefined {
  const match = /^(.*[\\/]node_modules[\\/](?:@[^\\/]+[\\/])?[^\\/]+)/.exec(file);
  return match?.[1];
}

/** A package with a compiled addon cannot be bundled; it stays external. */
function isNativePackage(root: string): boolean {
  if (existsSync(join(root, "binding.gyp"))) return true;
  try {
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { gypfile?: boolean };
    return manifest.gypfile === true;
  } catch {
    return false;
  }
}

/**
 * Decides, for each bare import, whether it goes into the bundle: TypeScript sources (the factory, its
 * store, workspace packages) and LangGraph with its pure-JS dependencies do; a package the store under
 * test imports itself (its database driver) stays external, imported by absolute path, as does any
 * package with a native addon.
 */
function externalizePackages(): Plugin {
  const builtins = new Set(builtinModules);
  const native = new Map<string, boolean>();
  return {
    name: "resumable-externalize-packages",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === "inner") return undefined;
        if (args.path.startsWith("node:") || builtins.has(args.path) || builtins.has(args.path.split("/")[0]!)) {
          return { path: args.path, external: true };
        }
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: "inner",
        });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        if (TS_SOURCE.test(resolved.path) || !IN_NODE_MODULES.test(resolved.path)) return { path: resolved.path };
        const root = packageRoot(resolved.path);
        const fromDependency = IN_NODE_MODULES.test(args.importer);
        const isLangChain = /[\\/]node_modules[\\/]@langchain[\\/]/.test(resolved.path);
        let addon = false;
        if (root !== undefined) {
          if (!native.has(root)) native.set(root, isNativePackage(root));
          addon = native.get(root)!;
        }
        if (!addon && (isLangChain || fromDependency)) return { path: resolved.path };
        return { path: resolved.path, external: true };
      });
    },
  };
}

/** Where this module's sources live: `.ts` in the repository, `.js` once built. */
function childModulePath(): string {
  return siblingModule(import.meta.url, "child");
}

/** The path of module `name` next to `moduleUrl`, with the extension the caller itself has (`.ts` or `.js`). */
export function siblingModule(moduleUrl: string, name: string): string {
  const file = fileURLToPath(moduleUrl);
  return join(dirname(file), TS_SOURCE.test(file) ? `${name}.ts` : `${name}.js`);
}

/** Which function of which module the bundled entry calls with the factory's default export. */
export interface ChildEntry {
  /** Absolute path of the module. */
  module: string;
  /** Its export to call, as `main(factory, ...namespaces of modules)`. */
  exportName: string;
  /**
   * Absolute paths of further modules to bundle and hand to the entry, as module namespace objects
   * after the factory (a module the suite cannot depend on itself, such as `@resumable/recovery`).
   */
  modules?: string[];
}

/**
 * Writes the child entry for a factory module into `outDir` and returns its path.
 *
 * @param factoryModule Path of the module whose default export returns the store or saver.
 */
/**
 * Loads a CommonJS bundle through `vm.Script` with V8's code cache: the first child that finishes a
 * job stores the compiled code (including what the job compiled), later children skip most of the
 * parsing and compiling. Node 20 has no compile cache for ES modules, hence CommonJS.
 */
const LOADER = `"use strict";
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const Module = require("node:module");
const file = process.argv[2];
const cacheFile = file + ".v8-cache";
let cachedData;
try { cachedData = fs.readFileSync(cacheFile); } catch {}
const script = new vm.Script(Module.wrap(fs.readFileSync(file, "utf8")), { filename: file, cachedData });
const mod = new Module(file, module);
mod.filename = file;
mod.paths = Module._nodeModulePaths(path.dirname(file));
if (cachedData === undefined || script.cachedDataRejected) {
  globalThis.__resumableSaveCodeCache = () => {
    const tmp = cacheFile + "." + process.pid;
    try { fs.writeFileSync(tmp, script.createCachedData()); fs.renameSync(tmp, cacheFile); } catch {}
  };
}
script.runInThisContext().call(mod.exports, mod.exports, (id) => mod.require(id), mod, file, path.dirname(file));
`;

/** What {@link bundleChild} produced: the command line arguments of a child process. */
export interface ChildBundle {
  args: string[];
  format: "cjs" | "esm";
}

/**
 * Writes the child entry for a factory module into \`outDir\`: a CommonJS bundle run through a
 * code-caching loader, or an ES module bundle when the sources need ESM (top-level await).
 *
 * @param factoryModule Path of the module whose default export returns the store or saver.
 */
export async function bundleChild(factoryModule: string, outDir: string, main: ChildEntry = { module: childModulePath(), exportName: "childMain" }): Promise<ChildBundle> {
  const { build } = await import("esbuild");
  await mkdir(outDir, { recursive: true });
  const entry = join(outDir, "crash-child-entry.ts");
  await writeFile(
    entry,
    `import factory from ${JSON.stringify(resolve(factoryModule))};\n` +
      (main.modules ?? []).map((module, i) => `import * as module${i} from ${JSON.stringify(resolve(module))};\n`).join("") +
      `import { ${main.exportName} as main } from ${JSON.stringify(main.module)};\n` +
      `void main(factory${(main.modules ?? []).map((_, i) => `, module${i}`).join("")});\n`,
  );
  const common = {
    entryPoints: [entry],
    bundle: true,
    platform: "node" as const,
    target: "node20",
    conditions: ["dev-source"],
    plugins: [externalizePackages()],
    logLevel: "silent" as const,
    // The report names the store by its class name.
    keepNames: true,
  };
  try {
    const outfile = join(outDir, "crash-child.cjs");
    // Dynamic import() of an external driver becomes require(), which vm.Script can run.
    await build({ ...common, outfile, format: "cjs", supported: { "dynamic-import": false } });
    const loader = join(outDir, "crash-child-loader.cjs");
    await writeFile(loader, LOADER);
    return { args: [loader, outfile], format: "cjs" };
  } catch {
    const outfile = join(outDir, "crash-child.mjs");
    await build({
      ...common,
      outfile,
      format: "esm",
      // Bundled CommonJS dependencies may require() builtins; ESM output has no require of its own.
      banner: { js: `import { createRequire as __resumableCreateRequire } from "node:module"; const require = __resumableCreateRequire(import.meta.url);` },
    });
    return { args: [outfile], format: "esm" };
  }
}
