import { MongoClient, MongoServerError } from "mongodb";
import { afterAll, describe, expect, it } from "vitest";
import { createMongoTestDatabase, getMongoDb, type FerretDbHandler } from "../src/index.js";

describe.each<FerretDbHandler>(["sqlite", "postgresql"])("MongoDB test server (FerretDB, %s handler)", (handler) => {
  const clients: MongoClient[] = [];
  afterAll(async () => {
    for (const client of clients) await client.close();
  });

  it("finds the server once per process", async () => {
    const a = await getMongoDb(handler);
    const b = await getMongoDb(handler);
    expect(b.url).toBe(a.url);
    expect(a.handler).toBe(handler);
    // The global setup (vitest.config.ts) started it, unless the environment names one.
    expect(["provided", "env"]).toContain(a.source);
    if (a.source === "provided") expect(a.engine).toBe(`ferretdb-${handler}`);
  });

  it("serves insertOne, find with a filter and a unique index through the mongodb driver", async () => {
    const server = await getMongoDb(handler);
    const database = await createMongoTestDatabase("driver", server);
    expect(database.name).not.toBe((await createMongoTestDatabase("driver", server)).name);
    const client = new MongoClient(database.url, { serverSelectionTimeoutMS: 10_000 });
    clients.push(client);
    await client.connect();
    // The database in the URL is the driver's default.
    const db = client.db();
    expect(db.databaseName).toBe(database.name);
    const checkpoints = db.collection<{ thread: string; step: number; body: string }>("checkpoints");
    await checkpoints.createIndex({ thread: 1, step: 1 }, { unique: true });
    for (let step = 1; step <= 3; step++) await checkpoints.insertOne({ thread: "t1", step, body: `step ${step}` });
    await checkpoints.insertOne({ thread: "t2", step: 1, body: "other" });
    const found = await checkpoints
      .find({ thread: "t1", step: { $gte: 2 } }, { projection: { _id: 0 } })
      .sort({ step: -1 })
      .toArray();
    expect(found).toEqual([
      { thread: "t1", step: 3, body: "step 3" },
      { thread: "t1", step: 2, body: "step 2" },
    ]);
    const duplicate = await checkpoints.insertOne({ thread: "t1", step: 2, body: "again" }).catch((error: unknown) => error);
    expect(duplicate).toBeInstanceOf(MongoServerError);
    expect((duplicate as MongoServerError).code).toBe(11000);
    await db.dropDatabase();
  });
});
