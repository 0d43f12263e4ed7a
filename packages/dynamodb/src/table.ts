/**
 * The table: its definition (for `setup()`, CloudFormation and Terraform), creation, and TTL.
 *
 * @module
 */
import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  UpdateTimeToLiveCommand,
  type CreateTableCommandInput,
  type DescribeTableCommandOutput,
  type DescribeTimeToLiveCommandOutput,
  type TableDescription,
  TransactWriteItemsCommand,
  UpdateTableCommand,
  type GlobalSecondaryIndex,
} from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, StoreNotSetUpError, StoreTimeoutError } from "@resumable/core";

import { errorName } from "./errors.js";
import { PK, SK } from "./keys.js";
import { STATUS_INDEX, STATUS_INDEX_PK, STATUS_INDEX_SK } from "./many-workers.js";
import type { TableClient } from "./table-client.js";

/** How `setup()` creates a missing table. */
export interface CreateTableOptions {
  /** Default `"PAY_PER_REQUEST"` (on-demand): no capacity to plan, no throttling below account limits. */
  billingMode?: "PAY_PER_REQUEST" | "PROVISIONED";
  /** Read capacity units with `"PROVISIONED"`. Default 5. */
  readCapacityUnits?: number;
  /** Write capacity units with `"PROVISIONED"`. Default 5. */
  writeCapacityUnits?: number;
  /** How long to wait for the table (or the status index) to become ACTIVE, in milliseconds. Default 300000. */
  timeoutMs?: number;
  /**
   * Include the status index of the `manyWorkers` option (`threads-by-status`: partition key `gs`,
   * sort key `gu`, keys only). The store sets it from its own option; set it yourself only when you
   * call {@link tableDefinition} for infrastructure code.
   */
  manyWorkers?: boolean;
}

/** The status index's key attributes (with `manyWorkers`): both strings. */
export const STATUS_INDEX_ATTRIBUTE_DEFINITIONS = Object.freeze([
  Object.freeze({ AttributeName: STATUS_INDEX_PK, AttributeType: "S" as const }),
  Object.freeze({ AttributeName: STATUS_INDEX_SK, AttributeType: "S" as const }),
]);

/** The status index (with `manyWorkers`): sparse, only status items carry its keys; keys only. */
export function statusIndexDefinition(options: CreateTableOptions = {}): GlobalSecondaryIndex {
  return {
    IndexName: STATUS_INDEX,
    KeySchema: [
      { AttributeName: STATUS_INDEX_PK, KeyType: "HASH" },
      { AttributeName: STATUS_INDEX_SK, KeyType: "RANGE" },
    ],
    Projection: { ProjectionType: "KEYS_ONLY" },
    ...(options.billingMode === "PROVISIONED"
      ? { ProvisionedThroughput: { ReadCapacityUnits: options.readCapacityUnits ?? 5, WriteCapacityUnits: options.writeCapacityUnits ?? 5 } }
      : {}),
  };
}

/** The table's key attributes: both strings. */
export const ATTRIBUTE_DEFINITIONS = Object.freeze([
  Object.freeze({ AttributeName: PK, AttributeType: "S" as const }),
  Object.freeze({ AttributeName: SK, AttributeType: "S" as const }),
]);

/** The table's key schema: `pk` (the thread id) is the partition key, `sk` the sort key. */
export const KEY_SCHEMA = Object.freeze([
  Object.freeze({ AttributeName: PK, KeyType: "HASH" as const }),
  Object.freeze({ AttributeName: SK, KeyType: "RANGE" as const }),
]);

/** The `CreateTable` input `setup()` sends for a missing table. */
export function tableDefinition(tableName: string, options: CreateTableOptions = {}): CreateTableCommandInput {
  const provisioned = options.billingMode === "PROVISIONED";
  return {
    TableName: tableName,
    AttributeDefinitions: [...ATTRIBUTE_DEFINITIONS, ...(options.manyWorkers ? STATUS_INDEX_ATTRIBUTE_DEFINITIONS : [])].map((a) => ({ ...a })),
    KeySchema: KEY_SCHEMA.map((k) => ({ ...k })),
    BillingMode: provisioned ? "PROVISIONED" : "PAY_PER_REQUEST",
    ...(options.manyWorkers ? { GlobalSecondaryIndexes: [statusIndexDefinition(options)] } : {}),
    ...(provisioned
      ? { ProvisionedThroughput: { ReadCapacityUnits: options.readCapacityUnits ?? 5, WriteCapacityUnits: options.writeCapacityUnits ?? 5 } }
      : {}),
  };
}

/**
 * The table as infrastructure code to copy: a CloudFormation resource (YAML) or a Terraform
 * `aws_dynamodb_table`, on-demand, with TTL on `ttlAttribute` when given and the status index of the
 * `manyWorkers` option when `manyWorkers` is set.
 *
 * @example
 * ```ts
 * console.log(tableTemplate("terraform", "checkpoints", { ttlAttribute: "expires_at" }));
 * ```
 */
export function tableTemplate(format: "cloudformation" | "terraform", tableName: string, options: { ttlAttribute?: string; manyWorkers?: boolean } = {}): string {
  const ttl = options.ttlAttribute;
  const attributes = [...ATTRIBUTE_DEFINITIONS, ...(options.manyWorkers ? STATUS_INDEX_ATTRIBUTE_DEFINITIONS : [])];
  if (format === "cloudformation") {
    return [
      "CheckpointsTable:",
      "  Type: AWS::DynamoDB::Table",
      "  Properties:",
      `    TableName: ${tableName}`,
      "    BillingMode: PAY_PER_REQUEST",
      "    AttributeDefinitions:",
      ...attributes.flatMap((a) => [`      - AttributeName: ${a.AttributeName}`, `        AttributeType: ${a.AttributeType}`]),
      "    KeySchema:",
      ...KEY_SCHEMA.flatMap((k) => [`      - AttributeName: ${k.AttributeName}`, `        KeyType: ${k.KeyType}`]),
      ...(options.manyWorkers
        ? [
            "    GlobalSecondaryIndexes:",
            `      - IndexName: ${STATUS_INDEX}`,
            "        KeySchema:",
            `          - AttributeName: ${STATUS_INDEX_PK}`,
            "            KeyType: HASH",
            `          - AttributeName: ${STATUS_INDEX_SK}`,
            "            KeyType: RANGE",
            "        Projection:",
            "          ProjectionType: KEYS_ONLY",
          ]
        : []),
      ...(ttl ? ["    TimeToLiveSpecification:", `      AttributeName: ${ttl}`, "      Enabled: true"] : []),
    ].join("\n");
  }
  return [
    `resource "aws_dynamodb_table" "checkpoints" {`,
    `  name         = "${tableName}"`,
    `  billing_mode = "PAY_PER_REQUEST"`,
    `  hash_key     = "${PK}"`,
    `  range_key    = "${SK}"`,
    "",
    ...attributes.flatMap((a) => ["  attribute {", `    name = "${a.AttributeName}"`, `    type = "${a.AttributeType}"`, "  }"]),
    ...(options.manyWorkers
      ? [
          "",
          "  global_secondary_index {",
          `    name            = "${STATUS_INDEX}"`,
          `    hash_key        = "${STATUS_INDEX_PK}"`,
          `    range_key       = "${STATUS_INDEX_SK}"`,
          `    projection_type = "KEYS_ONLY"`,
          "  }",
        ]
      : []),
    ...(ttl ? ["", "  ttl {", `    attribute_name = "${ttl}"`, "    enabled        = true", "  }"] : []),
    "}",
  ].join("\n");
}

/**
 * Makes sure the table exists with this store's key schema and is ACTIVE: creates it when asked and
 * waits for it; with `manyWorkers`, checks that the endpoint has transactions and that the status
 * index exists (adding it to an existing table when `create` is given); enables TTL on `ttlAttribute`
 * when given.
 */
export async function setupTable(db: TableClient, create: CreateTableOptions | undefined, ttlAttribute: string | undefined, manyWorkers = false): Promise<void> {
  let table = await describe(db);
  if (!table) {
    if (!create) {
      throw new StoreNotSetUpError(
        db.store,
        `table "${db.table}" does not exist. Create it with \`createTable: true\`, or from tableDefinition() / tableTemplate() ` +
          `(partition key "${PK}" and sort key "${SK}", both strings)`,
      );
    }
    try {
      await db.send("CreateTable", "setup", new CreateTableCommand(tableDefinition(db.table, { ...create, manyWorkers })));
    } catch (error) {
      // Another process created it first: wait for it like for our own.
      if (errorName(error) !== "ResourceInUseException") throw error;
    }
  }
  table = await waitActive(db, create?.timeoutMs ?? 300_000);
  const keys = (table.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(",");
  const types = new Map((table.AttributeDefinitions ?? []).map((a) => [a.AttributeName, a.AttributeType]));
  if (keys !== `${PK}:HASH,${SK}:RANGE` || types.get(PK) !== "S" || types.get(SK) !== "S") {
    throw new StoreNotSetUpError(
      db.store,
      `table "${db.table}" has the key schema ${keys || "(none)"} (${[...types].map(([n, t]) => `${n}: ${t}`).join(", ")}), ` +
        `not this store's: partition key "${PK}" and sort key "${SK}", both strings. Use another table name`,
    );
  }
  if (manyWorkers) {
    await checkTransactions(db);
    await ensureStatusIndex(db, table, create);
  }
  if (ttlAttribute !== undefined) await enableTtl(db, ttlAttribute);
}

/**
 * `manyWorkers` needs TransactWriteItems (a ConditionCheck on the lease item beside the commit point):
 * one transaction whose only action is a ConditionCheck that holds (an item nobody writes does not
 * exist) proves the endpoint has it and writes nothing.
 */
async function checkTransactions(db: TableClient): Promise<void> {
  try {
    await db.send(
      "TransactWriteItems probe",
      "setup",
      new TransactWriteItemsCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: db.table,
              Key: { [PK]: { S: "\u0001resumable setup probe" }, [SK]: { S: "probe" } },
              ConditionExpression: "attribute_not_exists(#pk)",
              ExpressionAttributeNames: { "#pk": PK },
            },
          },
        ],
      }),
    );
  } catch (error) {
    const name = errorName(error);
    if (name === "UnknownOperationException" || (name === "ValidationException" && /not (yet )?(supported|implemented)|unknown operation/i.test((error as Error).message))) {
      throw new InvalidConfigError(
        "manyWorkers",
        `${db.store}: the endpoint has no TransactWriteItems (${name}; dynalite has none), and manyWorkers needs it: a fenced write is a ` +
          `transaction of a ConditionCheck on the thread's lease item and the write's commit point. Use DynamoDB itself or moto (5.x has ` +
          `transactions) for leases and thread status, or leave manyWorkers off (one writer per thread).`,
      );
    }
    throw error;
  }
}

/** Checks the status index, adding it (and waiting until it is ACTIVE) when `create` allows. */
async function ensureStatusIndex(db: TableClient, table: TableDescription, create: CreateTableOptions | undefined): Promise<void> {
  const index = (table.GlobalSecondaryIndexes ?? []).find((i) => i.IndexName === STATUS_INDEX);
  if (index) {
    const keys = (index.KeySchema ?? []).map((k) => `${k.AttributeName}:${k.KeyType}`).join(",");
    if (keys !== `${STATUS_INDEX_PK}:HASH,${STATUS_INDEX_SK}:RANGE`) {
      throw new StoreNotSetUpError(
        db.store,
        `table "${db.table}" has an index "${STATUS_INDEX}" with the key schema ${keys || "(none)"}, not partition key "${STATUS_INDEX_PK}" and sort key ` +
          `"${STATUS_INDEX_SK}" (both strings). Drop that index or use another table`,
      );
    }
  } else {
    if (!create) {
      throw new StoreNotSetUpError(
        db.store,
        `table "${db.table}" has no global secondary index "${STATUS_INDEX}", which manyWorkers lists threads through. Add it (partition key ` +
          `"${STATUS_INDEX_PK}", sort key "${STATUS_INDEX_SK}", both strings, keys only; see tableTemplate(..., { manyWorkers: true })), or pass createTable so that setup() adds it`,
      );
    }
    const provisioned = table.BillingModeSummary?.BillingMode === "PROVISIONED" || (table.BillingModeSummary === undefined && (table.ProvisionedThroughput?.WriteCapacityUnits ?? 0) > 0);
    try {
      await db.send(
        "UpdateTable add status index",
        "setup",
        new UpdateTableCommand({
          TableName: db.table,
          // All four: moto replaces the table's definitions with these rather than adding to them.
          AttributeDefinitions: [...ATTRIBUTE_DEFINITIONS, ...STATUS_INDEX_ATTRIBUTE_DEFINITIONS].map((a) => ({ ...a })),
          GlobalSecondaryIndexUpdates: [{ Create: statusIndexDefinition(provisioned ? { ...create, billingMode: "PROVISIONED" } : {}) }],
        }),
      );
    } catch (error) {
      // Another process is adding it: wait for it like for our own.
      if (errorName(error) !== "ResourceInUseException" && !/already exists/i.test((error as Error).message ?? "")) throw error;
    }
  }
  const deadline = Date.now() + (create?.timeoutMs ?? 300_000);
  for (let delay = 50; ; delay = Math.min(delay * 2, 2000)) {
    const current = await describe(db);
    const status = current?.GlobalSecondaryIndexes?.find((i) => i.IndexName === STATUS_INDEX)?.IndexStatus;
    // Emulators may leave IndexStatus out: they build indexes at once.
    if (status === undefined || status === "ACTIVE") return;
    if (Date.now() + delay > deadline) {
      throw new StoreTimeoutError(db.store, "setup", "unknown", `index "${STATUS_INDEX}" of table "${db.table}" was ${status} after ${create?.timeoutMs ?? 300_000} ms; it may still become ACTIVE`);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

async function describe(db: TableClient): Promise<TableDescription | undefined> {
  try {
    const out = await db.send<DescribeTableCommandOutput>("DescribeTable", "setup", new DescribeTableCommand({ TableName: db.table }));
    return out.Table;
  } catch (error) {
    if (error instanceof StoreNotSetUpError) return undefined;
    throw error;
  }
}

async function waitActive(db: TableClient, timeoutMs: number): Promise<TableDescription> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 2000)) {
    const table = await describe(db);
    if (table?.TableStatus === "ACTIVE") return table;
    if (Date.now() + delay > deadline) {
      throw new StoreTimeoutError(
        db.store,
        "setup",
        "unknown",
        `table "${db.table}" was ${table?.TableStatus ?? "missing"} after ${timeoutMs} ms; it may still become ACTIVE (raise createTable.timeoutMs)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

async function enableTtl(db: TableClient, attribute: string): Promise<void> {
  const unsupported = (error: unknown, operation: string) => {
    if (errorName(error) !== "UnknownOperationException") return error;
    return new InvalidConfigError(
      "ttl.enableOnTable",
      `${db.store}: the endpoint has no TTL API (${operation}: UnknownOperationException; dynalite has none). ` +
        `Items still carry "${attribute}" and reads hide expired threads; enable TTL on the table where the API exists, or set ttl.enableOnTable: false.`,
    );
  };
  let current: DescribeTimeToLiveCommandOutput;
  try {
    current = await db.send("DescribeTimeToLive", "setup", new DescribeTimeToLiveCommand({ TableName: db.table }));
  } catch (error) {
    throw unsupported(error, "DescribeTimeToLive");
  }
  const spec = current.TimeToLiveDescription;
  const status = spec?.TimeToLiveStatus;
  if ((status === "ENABLED" || status === "ENABLING") && spec?.AttributeName === attribute) return;
  if (status === "ENABLED" || status === "ENABLING") {
    throw new InvalidConfigError(
      "ttl.attribute",
      `${db.store}: TTL on table "${db.table}" is already enabled on "${spec?.AttributeName}", not "${attribute}"; DynamoDB allows one TTL attribute per table. ` +
        `Set ttl.attribute to "${spec?.AttributeName}", or disable TTL on the table first.`,
    );
  }
  try {
    await db.send("UpdateTimeToLive", "setup", new UpdateTimeToLiveCommand({ TableName: db.table, TimeToLiveSpecification: { AttributeName: attribute, Enabled: true } }));
  } catch (error) {
    throw unsupported(error, "UpdateTimeToLive");
  }
}
