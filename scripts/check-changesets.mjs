#!/usr/bin/env node
// CI's release check: every published package that changed since the last release is named by a
// pending changeset (.changeset/*.md), so `changeset version` gives each a real changelog entry,
// never only "Updated dependencies". Changesets' own `changeset status` only asks that some changeset
// exists, whichever packages it names.
//
//   node scripts/check-changesets.mjs [--since <git ref>]
//
// Without --since, the last release is the newest commit that changed the "version" of a published
// package.json (what `changeset version` does); before the first release, the repository's first commit.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
const { values } = parseArgs({ options: { since: { type: "string" } } });

function workspacePackages() {
  const dirs = [...readdirSync(join(root, "packages")).map((d) => join(root, "packages", d)), join(root, "conformance"), join(root, "bench"), ...readdirSync(join(root, "examples")).map((d) => join(root, "examples", d))];
  return dirs
    .filter((dir) => existsSync(join(dir, "package.json")))
    .map((dir) => ({ dir: relative(root, dir), manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) }));
}

const all = workspacePackages();
const published = all.filter((p) => p.manifest.private !== true);
const names = new Set(all.map((p) => p.manifest.name));

/** Whether a path inside the package ships in its tarball (its `files`, plus package.json). */
function ships(pkg, path) {
  if (path === "package.json") return true;
  const files = pkg.manifest.files ?? ["."];
  const excluded = files.filter((f) => f.startsWith("!")).map((f) => f.slice(1));
  const matches = (pattern, p) => {
    const glob = pattern
      .replace(/\*\*\//g, "\u0001")
      .replace(/\*\*/g, "\u0002")
      .replace(/\*/g, "\u0003")
      .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      .replace(/\u0001/g, "(.*/)?")
      .replace(/\u0002/g, ".*")
      .replace(/\u0003/g, "[^/]*");
    const re = new RegExp(`^${glob}(/.*)?$`);
    return re.test(p);
  };
  return files.some((f) => !f.startsWith("!") && matches(f, path)) && !excluded.some((f) => matches(f, path));
}

function lastRelease() {
  for (const commit of git("log", "--format=%H", "--", ...published.map((p) => `${p.dir}/package.json`)).split("\n").filter(Boolean)) {
    for (const pkg of published) {
      const diff = git("show", "--format=", "--unified=0", commit, "--", `${pkg.dir}/package.json`);
      // A version that changed, not a package that was added with one.
      if (/^-\s*"version":/m.test(diff) && /^\+\s*"version":/m.test(diff)) return commit;
    }
  }
  return git("rev-list", "--max-parents=0", "HEAD").split("\n").pop();
}

/** Pending changesets: file name → { package name → bump }, from their front matter. */
function pendingChangesets() {
  const dir = join(root, ".changeset");
  const out = new Map();
  const problems = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".md") && f !== "README.md")) {
    const text = readFileSync(join(dir, file), "utf8");
    const match = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text);
    if (!match) {
      problems.push(`.changeset/${file} has no front matter (--- "package": bump ---)`);
      continue;
    }
    const releases = new Map();
    for (const line of match[1].split("\n").filter((l) => l.trim())) {
      const entry = /^\s*["']?([^"':]+)["']?\s*:\s*(major|minor|patch|none)\s*$/.exec(line);
      if (!entry) problems.push(`.changeset/${file}: cannot read ${JSON.stringify(line)}`);
      else releases.set(entry[1], entry[2]);
    }
    for (const name of releases.keys()) {
      if (!names.has(name)) problems.push(`.changeset/${file} names ${name}, which is no package of this workspace`);
      else if (!published.some((p) => p.manifest.name === name)) problems.push(`.changeset/${file} names ${name}, which is private and never released`);
    }
    if (match[2].trim().length < 20) problems.push(`.changeset/${file} says too little for a changelog entry: ${JSON.stringify(match[2].trim())}`);
    out.set(file, releases);
  }
  return { changesets: out, problems };
}

const since = values.since ?? lastRelease();
const changedFiles = git("diff", "--name-only", `${since}`, "HEAD").split("\n").filter(Boolean);
// Locally, uncommitted work counts too, so the check can run before committing; CI checks commits only
// (its tests leave files in the clone).
if (!process.env.CI) {
  for (const line of git("status", "--porcelain", "--untracked-files=all").split("\n").filter(Boolean)) changedFiles.push(line.slice(3).split(" -> ").pop());
}
const { changesets, problems } = pendingChangesets();

const changed = published
  .map((pkg) => ({ pkg, files: [...new Set(changedFiles)].filter((f) => f.startsWith(`${pkg.dir}/`) && ships(pkg, f.slice(pkg.dir.length + 1))) }))
  .filter(({ files }) => files.length > 0);

for (const { pkg, files } of changed) {
  const covering = [...changesets].filter(([, releases]) => releases.has(pkg.manifest.name) && releases.get(pkg.manifest.name) !== "none");
  if (covering.length === 0) {
    problems.push(
      `${pkg.manifest.name} changed since ${since.slice(0, 12)} (${files.slice(0, 3).join(", ")}${files.length > 3 ? `, and ${files.length - 3} more` : ""}) ` +
        `but no pending changeset names it: run \`pnpm changeset\`, pick ${pkg.manifest.name}, and say what changed for its users`,
    );
  } else {
    console.log(`✓ ${pkg.manifest.name}: ${files.length} shipped file${files.length === 1 ? "" : "s"} changed, covered by ${covering.map(([f]) => `.changeset/${f}`).join(", ")}`);
  }
}
for (const pkg of published.filter((p) => !changed.some((c) => c.pkg === p))) console.log(`- ${pkg.manifest.name}: unchanged since ${since.slice(0, 12)}`);

if (problems.length > 0) {
  console.error(`check-changesets: ${problems.length} problem${problems.length === 1 ? "" : "s"}:\n${problems.map((p) => `  ✗ ${p}`).join("\n")}`);
  process.exit(1);
}
console.log(`check-changesets: every published package changed since ${since.slice(0, 12)} has a changeset`);
