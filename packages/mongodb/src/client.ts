/**
 * Opening a `MongoClient` from a URL. The driver is loaded only here, so a caller who hands in their
 * own client loads nothing else.
 *
 * @module
 */
import { InvalidConfigError } from "@resumable/core";
import type { MongoClient, MongoClientOptions } from "mongodb";

import { MongoUnavailableError } from "./errors.js";

/** Refuses what is not a `mongodb://` or `mongodb+srv://` URL before the driver would try it. */
export function checkUrl(url: unknown): string {
  const example = `e.g. "mongodb://user:password@localhost:27017/app"`;
  if (typeof url !== "string" || url.trim() === "") {
    throw new InvalidConfigError(
      "url",
      `@resumable/mongodb: the URL is ${typeof url === "string" ? "empty" : `not a string (${typeof url})`}; pass a MongoDB connection string, ${example}.`,
    );
  }
  if (!/^mongodb(\+srv)?:\/\/[^/]/.test(url)) {
    const shown = url.length > 80 ? `${url.slice(0, 80)}…` : url;
    throw new InvalidConfigError("url", `@resumable/mongodb: ${JSON.stringify(shown)} is not a MongoDB URL; it must start with mongodb:// or mongodb+srv://, ${example}.`);
  }
  return url;
}

/**
 * Creates and connects a `MongoClient` (server selection waits 10 s by default, not the driver's 30 s).
 * An unreachable server fails here with {@link MongoUnavailableError}.
 */
export async function connectClient(url: string, options: MongoClientOptions = {}): Promise<MongoClient> {
  checkUrl(url);
  let mod: typeof import("mongodb");
  try {
    mod = await import("mongodb");
  } catch (cause) {
    throw new Error(`@resumable/mongodb needs the "mongodb" package to connect from a URL: npm install mongodb@^7`, { cause });
  }
  let client: MongoClient;
  try {
    client = new mod.MongoClient(url, { serverSelectionTimeoutMS: 10_000, ...options });
  } catch (error) {
    throw new InvalidConfigError("url", `@resumable/mongodb: the driver refused the URL or options: ${(error as Error).message}`);
  }
  try {
    await client.connect();
  } catch (error) {
    await client.close().catch(() => {});
    throw new MongoUnavailableError("connect", error);
  }
  return client;
}
