/**
 * DynamoDB in the benchmark: Resumable's `DynamoDBSaver`, each measurement on a table of its own.
 *
 * No DynamoDB can be reached from here, so the server is an emulator: moto 5.2.5's server (a Python
 * process of its own, from the venv `scripts/setup.sh` builds, or `RESUMABLE_MOTO_ENDPOINT`), or
 * dynalite 4 with `RESUMABLE_BENCH_DYNAMODB=dynalite` (in the benchmark's own process, so its work
 * counts against the saver's). Emulator latency says nothing about AWS: no network, no replication
 * across availability zones, no throttling. Bytes are what DynamoDB bills, which an emulator computes
 * as AWS does.
 *
 * Floors: a consistent GetItem of a missing key, and a one-item PutItem. Bytes: logical = every item
 * the saver wrote, sized as DynamoDB counts it (attribute names plus values: UTF-8 strings, binary
 * lengths, numbers at one byte per two significant digits plus one), which is what reads and writes
 * are billed by; physical = logical plus the 100 bytes per item DynamoDB adds to billed storage.
 *
 * @module
 */
import { createRequire } from "node:module";
import type { ResumableSaver } from "@resumable/core";
import { getDynamoDb, type DynamoDbEmulator } from "@resumable/test-servers";
import type { BackendInstance, BackendSpec, ByteSize, Floor } from "./backends.js";
import { RoundTripCounter } from "./counters.js";

type AttributeValue = { S?: string; B?: Uint8Array; N?: string };
type Item = Record<string, AttributeValue>;

/** What the benchmark uses of the AWS SDK (the one `@resumable/dynamodb` loads) and of the package. */
interface Client {
  send(command: object): Promise<{ Items?: Item[]; LastEvaluatedKey?: Item }>;
  destroy(): void;
}
interface Sdk {
  DynamoDBClient: new (config: object) => Client;
  ScanCommand: new (input: object) => object;
  GetItemCommand: new (input: object) => object;
  PutItemCommand: new (input: object) => object;
  DeleteTableCommand: new (input: object) => object;
}
interface ResumableDynamoModule {
  DynamoDBSaver: new (client: Client, tableName: string, options: { createTable: boolean }) => ResumableSaver;
}

/** The saver's sources (the benchmark runs them through tsx), and the SDK they load. */
const RESUMABLE_DYNAMODB = new URL("../../packages/dynamodb/src/index.ts", import.meta.url);

async function load(): Promise<{ mod: ResumableDynamoModule; sdk: Sdk; version: string } | string> {
  try {
    const mod = (await import(RESUMABLE_DYNAMODB.href)) as Partial<ResumableDynamoModule>;
    if (typeof mod.DynamoDBSaver !== "function") return "not available (@resumable/dynamodb exports no DynamoDBSaver)";
    const require = createRequire(RESUMABLE_DYNAMODB);
    const sdk = require("@aws-sdk/client-dynamodb") as Sdk;
    const version = (require("@aws-sdk/client-dynamodb/package.json") as { version: string }).version;
    return { mod: mod as ResumableDynamoModule, sdk, version };
  } catch (error) {
    return `not available (@resumable/dynamodb does not load: ${(error as Error).message.split("\n")[0]})`;
  }
}

const EMULATOR: DynamoDbEmulator = process.env.RESUMABLE_BENCH_DYNAMODB === "dynalite" ? "dynalite" : "moto";

/** DynamoDB's size of a number: one byte per two significant digits, plus one. */
function numberBytes(n: string): number {
  const digits = n.replace(/^-/, "").replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

function itemBytes(item: Item): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) {
    size += Buffer.byteLength(name, "utf8");
    if (value.S !== undefined) size += Buffer.byteLength(value.S, "utf8");
    else if (value.B !== undefined) size += value.B.byteLength;
    else if (value.N !== undefined) size += numberBytes(value.N);
  }
  return size;
}

const FLOOR_THREAD = "bench-floor";

async function measureTable(sdk: Sdk, client: Client, table: string): Promise<ByteSize> {
  let logical = 0;
  let items = 0;
  let start: Item | undefined;
  do {
    const out = await client.send(new sdk.ScanCommand({ TableName: table, ConsistentRead: true, ...(start ? { ExclusiveStartKey: start } : {}) }));
    for (const item of out.Items ?? []) {
      if (item["pk"]?.S === FLOOR_THREAD) continue;
      logical += itemBytes(item);
      items += 1;
    }
    start = out.LastEvaluatedKey;
  } while (start);
  return { logical, physical: logical + 100 * items };
}

let sequence = 0;

/** Resumable's `DynamoDBSaver`, on an emulator. */
export const resumableDynamoDb: BackendSpec = {
  id: "resumable-dynamodb",
  label: "Resumable DynamoDB",
  owner: "resumable",
  database: "dynamodb",
  embedded: false,
  notes: [],
  async unavailable() {
    const loaded = await load();
    if (typeof loaded === "string") return loaded;
    try {
      await getDynamoDb(EMULATOR);
      return undefined;
    } catch (error) {
      return `no DynamoDB emulator found (${EMULATOR}: ${(error as Error).message.split("\n")[0]})`;
    }
  },
  async open(_ctx, tag) {
    const loaded = await load();
    if (typeof loaded === "string") throw new Error(loaded);
    const { mod, sdk } = loaded;
    const server = await getDynamoDb(EMULATOR);
    const client = new sdk.DynamoDBClient({ ...server.clientConfig, credentials: { ...server.credentials } });
    sequence += 1;
    const table = `bench_${tag.replace(/[^a-z0-9]+/gi, "_")}_${process.pid}_${sequence}`.slice(0, 255);
    const saver = new mod.DynamoDBSaver(client, table, { createTable: true });
    await saver.setup();
    const key = { pk: { S: FLOOR_THREAD }, sk: { S: "floor" } };
    const floor: Floor = {
      label: "GetItem (consistent, missing key)",
      op: () => client.send(new sdk.GetItemCommand({ TableName: table, Key: key, ConsistentRead: true })),
      writeLabel: "one-item PutItem",
      writeOp: () => client.send(new sdk.PutItemCommand({ TableName: table, Item: { ...key, v: { S: "1" } } })),
    };
    if (this.notes.length === 0) {
      this.notes.push(
        `DynamoDB emulator: ${EMULATOR === "moto" ? "moto 5.2.5's server" : "dynalite 4 in the benchmark's process"} (${server.source === "env" ? "from the environment" : "started by the benchmark"}), ` +
          `@aws-sdk/client-dynamodb ${loaded.version}, consistent reads. Emulator latency says nothing about AWS (no network, no replication, no throttling); the bytes are what DynamoDB bills`,
      );
      this.notes.push("bytes: logical = item sizes as DynamoDB counts them (attribute names + values), what reads and writes are billed by; physical = logical + 100 bytes per item, DynamoDB's billed storage");
    }
    const roundTrips = new RoundTripCounter();
    saver.store.instrument?.(() => roundTrips.hit());
    const instance: BackendInstance = {
      saver,
      measureBytes: () => measureTable(sdk, client, table),
      floor,
      roundTrips,
      close: async () => {
        await saver.close();
        await client.send(new sdk.DeleteTableCommand({ TableName: table })).catch(() => {});
        client.destroy();
      },
    };
    return instance;
  },
};
