import { records } from "@resumable/conformance";
import { createMongoTestDatabase, getMongoDb, type FerretDbHandler, type MongoDbServer } from "@resumable/test-servers";
import { MongoClient, type CommandStartedEvent } from "mongodb";

/** The FerretDB handlers every suite runs on (or the one server `RESUMABLE_MONGODB_URL` names, twice). */
export const HANDLERS: readonly FerretDbHandler[] = ["sqlite", "postgresql"];

/** A client on one handler's server, and databases on it that `closeAll()` drops. */
export class TestServer {
  server!: MongoDbServer;
  client!: MongoClient;
  private readonly databases = new Set<string>();

  constructor(readonly handler: FerretDbHandler) {}

  async init(): Promise<this> {
    this.server = await getMongoDb(this.handler);
    this.client = await MongoClient.connect(this.server.url, { monitorCommands: true });
    return this;
  }

  /** A fresh database name on this server (created on first write), dropped by `closeAll()`. */
  async database(label = "t"): Promise<string> {
    return (await this.databaseWithUrl(label)).name;
  }

  /** As {@link database}, with the server's URL naming it as its path. */
  async databaseWithUrl(label = "t"): Promise<{ name: string; url: string }> {
    const db = await createMongoTestDatabase(label, this.server);
    this.databases.add(db.name);
    return db;
  }

  async drop(name: string): Promise<void> {
    this.databases.delete(name);
    await this.client.db(name).dropDatabase().catch(() => {});
  }

  /** Counts the commands the client sends (round trips), optionally only those matching `filter`. */
  countCommands(): { count: () => number; names: () => string[]; reset: () => void; stop: () => void } {
    const seen: string[] = [];
    const listener = (event: CommandStartedEvent) => void seen.push(`${event.commandName} ${String(event.command[event.commandName])}`);
    this.client.on("commandStarted", listener);
    return {
      count: () => seen.length,
      names: () => [...seen],
      reset: () => void seen.splice(0),
      stop: () => void this.client.off("commandStarted", listener),
    };
  }

  async closeAll(): Promise<void> {
    for (const name of [...this.databases]) await this.drop(name);
    await this.client?.close();
  }
}

let counter = 0;
/** A thread id no other test uses. */
export const threadId = (label = "t"): string => `${label}-${process.pid}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

// Record builders shared with every backend's store-level tests.
export const { text, json, empty, record, blob, write, cid, decode } = records;
