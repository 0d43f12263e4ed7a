/**
 * Opens the database the CLI looks at: a PostgreSQL URL, a SQLite file, or a module whose default
 * export returns a store or saver (the same factory `resumable-conformance` takes).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { InvalidConfigError, ResumableSaver, type CheckpointStore } from "@resumable/core";

/** A saver the CLI opened, and how to close what it opened. */
export interface OpenedTarget {
  saver: ResumableSaver;
  /** What the output names the database as (a URL without its password). */
  label: string;
  close(): Promise<void>;
}

/** Where the database is: `--db` (URL or file) or `--store` (a module). */
export interface TargetOptions {
  db?: string;
  schema?: string;
  store?: string;
}

/** Opens the database named by the options; throws {@link InvalidConfigError} saying what to pass. */
export async function openTarget(options: TargetOptions): Promise<OpenedTarget> {
  if ((options.db === undefined) === (options.store === undefined)) {
    throw new InvalidConfigError("db", "give the database with --db <postgres://... | file.sqlite>, or --store <module> (a module whose default export returns a store)");
  }
  if (options.store !== undefined) return openModule(options.store);
  const db = options.db!;
  if (/^postgres(ql)?:\/\//.test(db) || db.startsWith("socket:")) {
    const pg = (await importOptional("@resumable/postgres", "a PostgreSQL URL")) as typeof import("@resumable/postgres");
    const store = await pg.PostgresStore.connect(db, options.schema ? { schema: options.schema } : {});
    return { saver: new ResumableSaver(store), label: `${db.replace(/\/\/([^:@/]*)(:[^@/]*)?@/, "//$1@")}${options.schema ? ` (schema ${options.schema})` : ""}`, close: () => store.close() };
  }
  const path = resolve(db);
  if (!existsSync(path)) throw new InvalidConfigError("db", `${path} does not exist; give the SQLite file the workers write (or a postgres:// URL).`);
  const sqlite = (await importOptional("@resumable/sqlite", "a SQLite file")) as typeof import("@resumable/sqlite");
  const store = new sqlite.SqliteStore(path);
  return { saver: new ResumableSaver(store), label: path, close: () => store.close() };
}

async function openModule(module: string): Promise<OpenedTarget> {
  const path = resolve(module);
  if (!existsSync(path)) throw new InvalidConfigError("store", `${path} does not exist.`);
  let loaded: unknown;
  if ([".ts", ".mts", ".cts"].includes(extname(path))) {
    // A computed specifier: the CommonJS build's resolution cannot see tsx's export map.
    const api = "tsx/esm/api";
    const tsx = (await importOptional(api, "a TypeScript module")) as { tsImport(specifier: string, parent: string): Promise<unknown> };
    loaded = await tsx.tsImport(pathToFileURL(path).href, pathToFileURL(path).href);
  } else {
    loaded = await import(pathToFileURL(path).href);
  }
  let factory = (loaded as { default?: unknown }).default ?? loaded;
  if (factory !== null && typeof factory === "object" && "default" in factory) factory = (factory as { default: unknown }).default;
  if (factory !== null && typeof factory === "object" && typeof (factory as { create?: unknown }).create === "function") factory = (factory as { create: unknown }).create;
  if (typeof factory !== "function") throw new InvalidConfigError("store", `${path} must default-export a function returning a store or saver.`);
  const subject = (await (factory as (context: { workDir: string }) => unknown)({ workDir: process.cwd() })) as CheckpointStore | ResumableSaver;
  if (subject instanceof ResumableSaver) return { saver: subject, label: path, close: () => subject.close() };
  if (subject && typeof (subject as CheckpointStore).putCheckpoint === "function") {
    const saver = new ResumableSaver(subject as CheckpointStore);
    return { saver, label: path, close: () => saver.close() };
  }
  throw new InvalidConfigError("store", `${path}'s default export returned neither a CheckpointStore nor a Resumable saver.`);
}

async function importOptional(specifier: string, what: string): Promise<unknown> {
  try {
    return await import(specifier);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") {
      const name = specifier.split("/").slice(0, specifier.startsWith("@") ? 2 : 1).join("/");
      throw new InvalidConfigError("db", `reading ${what} needs ${name}: npm install ${name}`);
    }
    throw error;
  }
}
