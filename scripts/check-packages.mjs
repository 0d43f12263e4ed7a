#!/usr/bin/env node
// Installs the published packages the way a user does, outside the workspace, and uses them there:
//
//   1. builds (`pnpm -r build`) and packs (`pnpm pack`) every publishable package;
//   2. checks each tarball's contents and metadata (LICENSE, README without relative links, no
//      caches or tests, repository/homepage/bugs/engines, ESM-only said where it is);
//   3. installs the tarballs with npm into a fresh project in the system's temp directory, with
//      install scripts off, so that better-sqlite3 first lacks its native build: the error must say
//      what to run; then gives it its addon (the workspace's compiled copy of the same version, or
//      `npm rebuild better-sqlite3` with --rebuild-sqlite);
//   4. runs publint and @arethetypeswrong/cli on each tarball;
//   5. runs a graph with an interrupt on each backend's saver from ESM and from CommonJS (PostgreSQL
//      from $RESUMABLE_POSTGRES_URL, or a database lent by @resumable/test-servers), resuming in a new
//      process through `fromConnString`;
//   6. imports a LangChain SQLite and a LangChain PostgreSQL database with the installed CLIs and
//      resumes the imported thread;
//   7. runs the installed `resumable-conformance` on a TypeScript store and on examples/custom-store
//      copied into the project.
//
// It is the check that the workspace cannot hide a packaging bug (workspace links point outside
// node_modules, so bundlers and loaders treat our files differently there).
//
//   node scripts/check-packages.mjs [--no-build] [--keep] [--rebuild-sqlite]
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const flags = new Set(process.argv.slice(2));
for (const flag of flags) {
  if (!["--no-build", "--keep", "--rebuild-sqlite"].includes(flag)) {
    console.error(`check-packages: unknown option ${flag}\nUsage: node scripts/check-packages.mjs [--no-build] [--keep] [--rebuild-sqlite]`);
    process.exit(2);
  }
}

const PUBLINT = "publint@0.3.25";
const ATTW = "@arethetypeswrong/cli@0.18.5";
const REPOSITORY = /^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/;

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const started = performance.now();
const results = [];

function log(line = "") {
  process.stdout.write(`${line}\n`);
}

/** Runs one named check; a failure is recorded and the run goes on, so one run shows every problem. */
async function step(name, body) {
  const t0 = performance.now();
  try {
    const detail = await body();
    const ms = performance.now() - t0;
    results.push({ name, ok: true, ms });
    log(`✓ ${name} (${(ms / 1000).toFixed(1)} s)${detail ? `: ${detail}` : ""}`);
    return true;
  } catch (error) {
    const ms = performance.now() - t0;
    results.push({ name, ok: false, ms });
    log(`✗ ${name} (${(ms / 1000).toFixed(1)} s)`);
    log(indent(error instanceof Error ? error.message : String(error)));
    return false;
  }
}

function indent(text, n = 4) {
  return text
    .trimEnd()
    .split("\n")
    .map((line) => " ".repeat(n) + line)
    .join("\n");
}

function tail(text, lines = 40) {
  const all = text.trimEnd().split("\n");
  return (all.length > lines ? ["…", ...all.slice(-lines)] : all).join("\n");
}

/** The environment of a user's shell: nothing of a pnpm script or a vitest run this may be part of. */
function userEnv(extra = {}) {
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith("npm_") || key.startsWith("PNPM_") || key.startsWith("VITEST") || key === "NODE_OPTIONS" || key === "TEST") continue;
    env[key] = value;
  }
  // node-gyp needs the local headers to compile better-sqlite3 (--rebuild-sqlite).
  env.npm_config_nodedir = process.env.npm_config_nodedir ?? "/usr";
  env.npm_config_update_notifier = "false";
  env.npm_config_fund = "false";
  env.npm_config_audit = "false";
  return { ...env, ...extra };
}

/** Runs a command to completion; throws with its output unless it exits with `expect` (default 0; `null`: any). */
function run(command, args, { cwd, env, expect = 0, timeoutMs = 600_000 } = {}) {
  const result = spawnSync(command, args, { cwd, env: env ?? userEnv(), encoding: "utf8", timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  if (result.error) throw new Error(`${command} ${args.join(" ")}: ${result.error.message}\n${tail(output)}`);
  if (expect !== null && result.status !== expect) {
    throw new Error(`\`${command} ${args.join(" ")}\` exited ${result.status ?? result.signal} (expected ${expect}) in ${cwd}:\n${tail(output)}`);
  }
  return { status: result.status, stdout: result.stdout ?? "", stderr: result.stderr ?? "", output };
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

// ---------------------------------------------------------------------------------------------------
// The packages

function workspacePackages() {
  const dirs = [...readdirSync(join(root, "packages")).map((d) => join(root, "packages", d)), join(root, "conformance")];
  return dirs
    .filter((dir) => existsSync(join(dir, "package.json")))
    .map((dir) => ({ dir, manifest: readJson(join(dir, "package.json")) }))
    .filter(({ manifest }) => manifest.private !== true);
}

const packages = workspacePackages();
const byName = (name) => packages.find((p) => p.manifest.name === name);
assert(packages.length > 0, "no publishable package found");

/** Every version this check installs next to the tarballs is the one the workspace tests with. */
function devVersion(pkgName, dep) {
  const manifest = readJson(join(root, pkgName === "bench" ? "bench" : pkgName, "package.json"));
  const version = manifest.devDependencies?.[dep] ?? manifest.dependencies?.[dep];
  assert(version, `${pkgName}/package.json does not pin ${dep}`);
  return version;
}

const versions = {
  "@langchain/core": devVersion("packages/core", "@langchain/core"),
  "@langchain/langgraph": devVersion("packages/core", "@langchain/langgraph"),
  "@langchain/langgraph-checkpoint": devVersion("packages/core", "@langchain/langgraph-checkpoint"),
  "better-sqlite3": devVersion("packages/sqlite", "better-sqlite3"),
  pg: devVersion("packages/postgres", "pg"),
  vitest: devVersion("conformance", "vitest"),
  "@langchain/langgraph-checkpoint-sqlite": devVersion("bench", "@langchain/langgraph-checkpoint-sqlite"),
  "@langchain/langgraph-checkpoint-postgres": devVersion("bench", "@langchain/langgraph-checkpoint-postgres"),
};

const work = mkdtempSync(join(tmpdir(), "resumable-packages-"));
const tarballs = join(work, "tarballs");
const project = join(work, "project");
mkdirSync(tarballs);
mkdirSync(project);
assert(!relative(root, realpathSync(work)).split(sep).every((part) => part !== ".."), `${work} is inside the workspace`);
log(`check-packages: ${packages.map((p) => p.manifest.name).join(", ")}; working in ${work}`);


async function main() {
  if (!flags.has("--no-build")) {
    await step("pnpm -r build (every package, in dependency order, no workaround)", () => {
      run("pnpm", ["-r", "build"], { cwd: root, env: { ...process.env } });
    });
  }

  for (const pkg of packages) {
    await step(`pack ${pkg.manifest.name}`, () => {
      run("pnpm", ["pack", "--pack-destination", tarballs], { cwd: pkg.dir, env: { ...process.env } });
      const file = join(tarballs, `${pkg.manifest.name.replace(/^@/, "").replace("/", "-")}-${pkg.manifest.version}.tgz`);
      assert(existsSync(file), `pnpm pack wrote no ${file}`);
      pkg.tarball = file;
      return relative(work, file);
    });
  }
  const packed = packages.filter((p) => p.tarball);

  for (const pkg of packed) await step(`contents and metadata of ${pkg.manifest.name}`, () => checkContents(pkg));

  const installed = await step("npm install the tarballs into a fresh project (install scripts off)", () => {
    writeFileSync(
      join(project, "package.json"),
      `${JSON.stringify(
        {
          name: "resumable-consumer",
          private: true,
          type: "module",
          // LangChain's SQLite saver asks for a newer better-sqlite3 than Node 20 runs; one copy for all.
          overrides: { "better-sqlite3": versions["better-sqlite3"] },
        },
        null,
        2,
      )}\n`,
    );
    const deps = Object.entries(versions).map(([name, version]) => `${name}@${version}`);
    run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", ...packed.map((p) => p.tarball), ...deps, PUBLINT, ATTW], { cwd: project, timeoutMs: 900_000 });
    return `${readdirSync(join(project, "node_modules")).length} top-level entries`;
  });
  if (!installed) return;

  for (const pkg of packed) {
    await step(`publint ${pkg.manifest.name}`, () => {
      const { output } = run(join(project, "node_modules/.bin/publint"), ["run", pkg.tarball, "--strict"], { cwd: project });
      assert(!/^(Errors|Warnings):/m.test(output), output);
      return /Suggestions:/.test(output) ? `suggestions:\n${indent(output.split("Suggestions:")[1] ?? "", 6)}` : "clean";
    });
    await step(`attw ${pkg.manifest.name}`, () => {
      const esmOnly = !JSON.stringify(pkg.manifest.exports ?? {}).includes('"require"');
      const args = [pkg.tarball, "--format", "table-flipped", "--no-color", ...(esmOnly ? ["--profile", "esm-only"] : [])];
      run(join(project, "node_modules/.bin/attw"), args, { cwd: project });
      return esmOnly ? "clean (profile esm-only: the package says it is ESM-only)" : "clean";
    });
  }

  if (byName("@resumable/sqlite")) {
    await step("better-sqlite3 without its native build: opening a database says what to run", () => {
      writeFileSync(join(project, "bindings-error.mjs"), BINDINGS_ERROR);
      const { stdout } = run("node", ["bindings-error.mjs"], { cwd: project });
      const seen = JSON.parse(stdout.trim().split("\n").pop());
      assert(seen.opened === false, `the database opened although better-sqlite3 has no native build here:\n${stdout}`);
      for (const needle of ["better-sqlite3", "npm rebuild better-sqlite3", "pnpm approve-builds", "allowBuilds"]) {
        assert(seen.message.includes(needle), `the error does not say "${needle}":\n  ${seen.name}: ${seen.message}`);
      }
      assert(!/Could not locate the bindings file/.test(seen.message.split("\n")[0]), `the first line is the raw error:\n  ${seen.message}`);
      return `${seen.name}: ${seen.message.split("\n")[0]}`;
    });
    await step(flags.has("--rebuild-sqlite") ? "npm rebuild better-sqlite3" : "give better-sqlite3 its native addon", () => provideSqliteAddon());
    await step("the root README's example, saved as agent.mjs, runs", () => readmeExample());
    await step("@resumable/sqlite from ESM: a graph interrupts, a new process resumes it through fromConnString", () => graphRun("sqlite", "mjs"));
    await step("@resumable/sqlite from CommonJS: the same", () => graphRun("sqlite", "cjs"));
    await step("resumable-sqlite import-langchain: a LangChain SQLite thread, imported, resumes on ours", () => importLangchain("sqlite"));
  }

  if (byName("@resumable/postgres")) {
    const ready = await step("a PostgreSQL database", async () => {
      postgres = await lendPostgres();
      return postgres.source;
    });
    if (ready) {
      await step("@resumable/postgres from ESM: a graph interrupts, a new process resumes it through fromConnString", () => graphRun("postgres", "mjs"));
      await step("@resumable/postgres from CommonJS: the same", () => graphRun("postgres", "cjs"));
      await step("resumable-postgres import-langchain: a LangChain PostgreSQL thread, imported, resumes on ours", () => importLangchain("postgres"));
    }
  }

  if (byName("@resumable/conformance")) {
    await step("npx resumable-conformance ./my-store.ts (a TypeScript store)", () => {
      writeFileSync(join(project, "my-store.ts"), MY_STORE);
      return conformance("./my-store.ts", "my-store", ["--no-crash"]);
    });
    await step("npx resumable-conformance on examples/custom-store copied into the project", () => {
      cpSync(join(root, "examples/custom-store/src"), join(project, "custom-store/src"), { recursive: true });
      return conformance("./custom-store/src/conformance.ts", "custom-store", ["--quick"]);
    });
    await step("the installed packages stay unwritten (no vitest cache inside node_modules)", () => {
      const found = [];
      const walk = (dir) => {
        for (const entry of readdirSync(dir, { withFileTypes: true })) {
          const path = join(dir, entry.name);
          if (entry.name === ".vite" || entry.name === ".vitest") found.push(relative(project, path));
          else if (entry.isDirectory()) walk(path);
        }
      };
      walk(join(project, "node_modules/@resumable"));
      assert(found.length === 0, `found ${found.join(", ")}`);
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Tarball contents

function checkContents(pkg) {
  const files = run("tar", ["-tzf", pkg.tarball], { cwd: work }).stdout.split("\n").filter(Boolean).map((f) => f.replace(/^package\//, ""));
  const problems = [];
  for (const required of ["package.json", "README.md", "LICENSE"]) if (!files.includes(required)) problems.push(`no ${required} in the tarball`);
  const unwanted = files.filter((f) => /(^|\/)node_modules\//.test(f) || /(^|\/)\.vite(st)?\//.test(f) || /\.test\.[cm]?[jt]s$/.test(f) || /\.tsbuildinfo$/.test(f));
  if (unwanted.length > 0) problems.push(`ships files no user needs: ${unwanted.slice(0, 5).join(", ")}${unwanted.length > 5 ? ` and ${unwanted.length - 5} more` : ""}`);
  const manifest = JSON.parse(run("tar", ["-xzOf", pkg.tarball, "package/package.json"], { cwd: work }).stdout);
  if (manifest.license !== "MIT") problems.push(`license is ${JSON.stringify(manifest.license)}, not "MIT"`);
  if (!REPOSITORY.test(manifest.repository?.url ?? "")) problems.push(`repository.url is ${JSON.stringify(manifest.repository?.url)}`);
  if (manifest.repository?.directory !== relative(root, pkg.dir)) problems.push(`repository.directory is ${JSON.stringify(manifest.repository?.directory)}, not "${relative(root, pkg.dir)}"`);
  if (!/^https:\/\//.test(manifest.homepage ?? "")) problems.push(`homepage is ${JSON.stringify(manifest.homepage)}`);
  if (!/^https:\/\//.test(manifest.bugs?.url ?? manifest.bugs ?? "")) problems.push(`bugs is ${JSON.stringify(manifest.bugs)}`);
  if (!manifest.engines?.node) problems.push("no engines.node");
  for (const [name, range] of Object.entries({ ...manifest.dependencies, ...manifest.peerDependencies })) {
    if (String(range).startsWith("workspace:")) problems.push(`dependency ${name} is still ${range}`);
  }
  if (files.includes("README.md")) {
    const readme = run("tar", ["-xzOf", pkg.tarball, "package/README.md"], { cwd: work }).stdout;
    const relativeLinks = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]).filter((href) => !/^(https?:|mailto:|#)/.test(href));
    if (relativeLinks.length > 0) problems.push(`README links that are dead on the registry: ${relativeLinks.join(", ")}`);
    const esmOnly = !JSON.stringify(manifest.exports ?? {}).includes('"require"');
    if (esmOnly && !/ESM[- ]only/i.test(readme)) problems.push("the package is ESM-only (no require condition) and its README does not say so");
  }
  assert(problems.length === 0, problems.map((p) => `- ${p}`).join("\n"));
  return `${files.length} files`;
}

// ---------------------------------------------------------------------------------------------------
// better-sqlite3

const BINDINGS_ERROR = `import { SqliteSaver } from "@resumable/sqlite";
try {
  const saver = await SqliteSaver.connect(":memory:");
  await saver.close();
  console.log(JSON.stringify({ opened: true }));
} catch (error) {
  console.log(JSON.stringify({ opened: false, name: error?.name, code: error?.code, message: String(error?.message ?? error) }));
}
`;

function provideSqliteAddon() {
  const target = join(project, "node_modules/better-sqlite3");
  const version = readJson(join(target, "package.json")).version;
  if (flags.has("--rebuild-sqlite")) {
    run("npm", ["rebuild", "better-sqlite3"], { cwd: project, timeoutMs: 900_000 });
    return `compiled ${version}`;
  }
  // The workspace compiled the same version for this Node (about 90 s from source); reuse it.
  const source = realpathSync(join(byName("@resumable/sqlite").dir, "node_modules/better-sqlite3"));
  const sourceVersion = readJson(join(source, "package.json")).version;
  const addon = join(source, "build/Release/better_sqlite3.node");
  if (sourceVersion !== version || !existsSync(addon)) {
    run("npm", ["rebuild", "better-sqlite3"], { cwd: project, timeoutMs: 900_000 });
    return `compiled ${version} (the workspace has ${sourceVersion}${existsSync(addon) ? "" : " without a build"})`;
  }
  mkdirSync(join(target, "build/Release"), { recursive: true });
  copyFileSync(addon, join(target, "build/Release/better_sqlite3.node"));
  return `copied the workspace's compiled better-sqlite3 ${version} (what \`npm rebuild better-sqlite3\` builds; --rebuild-sqlite compiles it)`;
}

/** The first TypeScript block under "## Ten lines" in the root README, run as the README says. */
function readmeExample() {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.split(/^## Ten lines$/m)[1];
  const code = /```ts\n([\s\S]*?)```/.exec(section ?? "")?.[1];
  assert(code, "the root README has no ```ts block under \"## Ten lines\"");
  writeFileSync(join(project, "agent.mjs"), code);
  run("node", ["agent.mjs"], { cwd: project });
  assert(existsSync(join(project, "agent.sqlite")), "agent.mjs wrote no agent.sqlite");
  return `${code.trim().split("\n").length} lines`;
}

// ---------------------------------------------------------------------------------------------------
// PostgreSQL

/** $RESUMABLE_POSTGRES_URL, or a database from @resumable/test-servers held by a helper process. */
async function lendPostgres() {
  if (process.env.RESUMABLE_POSTGRES_URL) {
    return { url: process.env.RESUMABLE_POSTGRES_URL, source: "RESUMABLE_POSTGRES_URL", close: async () => {} };
  }
  const dir = byName("@resumable/postgres").dir;
  const child = spawn(process.execPath, ["--conditions=dev-source", "--import", "tsx", "test/fixtures/serve-test-database.ts"], {
    cwd: dir,
    env: { ...process.env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`no database within 120 s:\n${output}`)), 120_000);
    child.stdout.on("data", (chunk) => {
      output += chunk;
      const line = output.split("\n").find((l) => l.startsWith("{"));
      if (line) {
        clearTimeout(timer);
        resolveUrl(JSON.parse(line).url);
      }
    });
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the database helper exited ${code}:\n${output}`));
    });
  });
  return {
    url,
    source: `a database lent by @resumable/test-servers (${new URL(url).host})`,
    close: () =>
      new Promise((done) => {
        child.removeAllListeners("exit");
        child.on("exit", () => done());
        child.stdin.end();
        setTimeout(() => {
          child.kill("SIGKILL");
          done();
        }, 20_000).unref();
      }),
  };
}

// ---------------------------------------------------------------------------------------------------
// A graph from ESM and from CommonJS

/**
 * The same program twice, once as an ES module and once as CommonJS: `start` runs a graph until its
 * interrupt, `resume` opens a new saver through `fromConnString` in a new process and finishes it.
 */
function graphProgram(backend, format) {
  const imports =
    format === "mjs"
      ? `import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";\nimport { ${backend === "sqlite" ? "SqliteSaver" : "PostgresSaver"} } from "@resumable/${backend}";`
      : `const { Annotation, Command, END, START, StateGraph, interrupt } = require("@langchain/langgraph");\nconst { ${backend === "sqlite" ? "SqliteSaver" : "PostgresSaver"} } = require("@resumable/${backend}");`;
  const open =
    backend === "sqlite"
      ? {
          start: `await SqliteSaver.connect(target)`,
          resume: `SqliteSaver.fromConnString(target)`,
        }
      : {
          start: `await PostgresSaver.connect(target, { schema })`,
          resume: `await (async () => { const s = PostgresSaver.fromConnString(target, { schema }); await s.setup(); return s; })()`,
        };
  return `${imports}
const [phase, target, schema] = process.argv.slice(2);
const State = Annotation.Root({ steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const build = (checkpointer) =>
  new StateGraph(State)
    .addNode("plan", () => ({ steps: ["plan"] }))
    .addNode("approve", () => ({ steps: [interrupt("approve?") === "yes" ? "approved" : "refused"] }))
    .addNode("act", () => ({ steps: ["act"] }))
    .addEdge(START, "plan")
    .addEdge("plan", "approve")
    .addEdge("approve", "act")
    .addEdge("act", END)
    .compile({ checkpointer });
const config = { configurable: { thread_id: "order-42" } };
async function main() {
  if (phase === "start") {
    const saver = ${open.start};
    const out = await build(saver).invoke({ steps: [] }, config);
    await saver.close();
    console.log(JSON.stringify({ steps: out.steps, interrupted: Array.isArray(out.__interrupt__) && out.__interrupt__.length === 1 }));
  } else {
    const saver = ${open.resume};
    const out = await build(saver).invoke(new Command({ resume: "yes" }), config);
    const state = await build(saver).getState(config);
    await saver.close();
    console.log(JSON.stringify({ steps: out.steps, next: state.next }));
  }
}
main().catch((error) => { console.error(error); process.exit(1); });
`;
}

function graphRun(backend, format) {
  const file = `${backend}-graph.${format}`;
  writeFileSync(join(project, file), graphProgram(backend, format));
  const target = backend === "sqlite" ? join(project, `${backend}-${format}.sqlite`) : postgres.url;
  const schema = `check_${format}_${process.pid}_${++schemas}`;
  const last = (out) => JSON.parse(out.trim().split("\n").pop());
  const first = last(run("node", [file, "start", target, schema], { cwd: project }).stdout);
  assert(first.interrupted && JSON.stringify(first.steps) === '["plan"]', `the first process did not stop at the interrupt: ${JSON.stringify(first)}`);
  const second = last(run("node", [file, "resume", target, schema], { cwd: project }).stdout);
  assert(JSON.stringify(second) === '{"steps":["plan","approved","act"],"next":[]}', `the resumed run did not finish as expected: ${JSON.stringify(second)}`);
  return `steps ${second.steps.join(" → ")}`;
}

// ---------------------------------------------------------------------------------------------------
// LangChain import

function importProgram(backend, phase) {
  const langchain = backend === "sqlite" ? "@langchain/langgraph-checkpoint-sqlite" : "@langchain/langgraph-checkpoint-postgres";
  const ours = backend === "sqlite" ? "@resumable/sqlite" : "@resumable/postgres";
  const saver = phase === "write" ? langchain : ours;
  const open =
    backend === "sqlite"
      ? `SqliteSaver.fromConnString(target)`
      : `(() => { const s = PostgresSaver.fromConnString(target, { schema }); return s; })()`;
  return `import { Annotation, Command, END, START, StateGraph, interrupt } from "@langchain/langgraph";
import { ${backend === "sqlite" ? "SqliteSaver" : "PostgresSaver"} } from "${saver}";
const [target, schema] = process.argv.slice(2);
const State = Annotation.Root({ steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });
const graph = (checkpointer) =>
  new StateGraph(State)
    .addNode("plan", () => ({ steps: ["plan"] }))
    .addNode("approve", () => ({ steps: [interrupt("approve?") === "yes" ? "approved" : "refused"] }))
    .addNode("act", () => ({ steps: ["act"] }))
    .addEdge(START, "plan").addEdge("plan", "approve").addEdge("approve", "act").addEdge("act", END)
    .compile({ checkpointer });
const config = { configurable: { thread_id: "order-42" } };
const saver = ${open};
${backend === "postgres" ? "await saver.setup();" : ""}
${
  phase === "write"
    ? `const out = await graph(saver).invoke({ steps: [] }, config);
console.log(JSON.stringify({ steps: out.steps }));`
    : `const out = await graph(saver).invoke(new Command({ resume: "yes" }), config);
console.log(JSON.stringify({ steps: out.steps }));`
}
await ${backend === "postgres" ? "saver.end()" : "(saver.close ? saver.close() : undefined)"};
`;
}

function importLangchain(backend) {
  writeFileSync(join(project, `${backend}-langchain-write.mjs`), importProgram(backend, "write"));
  writeFileSync(join(project, `${backend}-ours-resume.mjs`), importProgram(backend, "resume"));
  const last = (out) => JSON.parse(out.trim().split("\n").pop());
  let source;
  let target;
  let sourceArgs;
  let targetArgs;
  if (backend === "sqlite") {
    source = join(project, "langchain.sqlite");
    target = join(project, "imported.sqlite");
    sourceArgs = [source];
    targetArgs = [target];
  } else {
    source = postgres.url;
    target = postgres.url;
    sourceArgs = [source, `langchain_${process.pid}`];
    targetArgs = [target, `imported_${process.pid}`];
  }
  const written = last(run("node", [`${backend}-langchain-write.mjs`, ...sourceArgs], { cwd: project }).stdout);
  assert(JSON.stringify(written.steps) === '["plan"]', `LangChain's saver did not stop at the interrupt: ${JSON.stringify(written)}`);
  const cliArgs =
    backend === "sqlite" ? ["import-langchain", source, target] : ["import-langchain", source, target, "--source-schema", sourceArgs[1], "--schema", targetArgs[1]];
  const bin = join(project, "node_modules/.bin", `resumable-${backend}`);
  const first = run(bin, cliArgs, { cwd: project });
  assert(/imported 1 thread/.test(first.output), `the import printed no summary:\n${first.output}`);
  const again = run(bin, cliArgs, { cwd: project });
  assert(/0 new checkpoints/.test(again.output), `a second import was not a no-op:\n${again.output}`);
  const resumed = last(run("node", [`${backend}-ours-resume.mjs`, ...targetArgs], { cwd: project }).stdout);
  assert(JSON.stringify(resumed.steps) === '["plan","approved","act"]', `the imported thread did not resume: ${JSON.stringify(resumed)}`);
  return first.output.trim().split("\n").pop();
}

// ---------------------------------------------------------------------------------------------------
// The conformance CLI

const MY_STORE = `// A user's own store, in TypeScript, run through the conformance suite from the command line.
import { MemoryStore, type CheckpointStore } from "@resumable/core";

interface Context {
  workDir: string;
}

export default function createStore(_context: Context): CheckpointStore {
  return new MemoryStore();
}
`;

function conformance(modulePath, label, extra) {
  const json = join(work, `${label}-report.json`);
  const result = run(join(project, "node_modules/.bin/resumable-conformance"), [modulePath, "--json", json, ...extra], { cwd: project, expect: null, timeoutMs: 900_000 });
  const summary = result.stdout.split("\n").filter((l) => /^(Contract categories|LangChain validation suite|Crash injection|Result)/.test(l));
  // On failure: the report's section lines and its failures, not the thousand passing cases.
  const failures = result.stdout.split("\n").filter((l) => /^(Contract categories|LangChain validation suite|Crash injection|Result)|FAIL|✗|^ {12}\S/.test(l));
  assert(result.status === 0, `exited ${result.status}:\n${failures.slice(0, 40).join("\n")}\n${tail(result.stderr.split("\n").filter((l) => /resumable-conformance:|Error/.test(l)).join("\n"), 20)}`);
  const report = readJson(json);
  const langchain = report.sections.find((s) => s.id === "langchain");
  assert(langchain?.status === "passed", `LangChain's suite did not pass: ${JSON.stringify(langchain?.summary)}`);
  return `\n${indent(summary.join("\n"), 6)}`;
}

// ---------------------------------------------------------------------------------------------------

let postgres;
let schemas = 0;
try {
  await main();
} finally {
  await postgres?.close();
}
const failed = results.filter((r) => !r.ok);
log();
log(`check-packages: ${failed.length === 0 ? "PASSED" : "FAILED"} in ${((performance.now() - started) / 1000).toFixed(0)} s`);
for (const r of failed) log(`  failed: ${r.name}`);
log(`${results.length - failed.length} passed, ${failed.length} failed`);
if (failed.length === 0 && !flags.has("--keep")) rmSync(work, { recursive: true, force: true });
else log(`check-packages: the project is kept in ${project}`);
process.exit(failed.length === 0 ? 0 : 1);
