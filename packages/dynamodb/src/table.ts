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
} from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, StoreNotSetUpError, StoreTimeoutError } from "@resumable/core";

import { errorName } from "./errors.js";
import { PK, SK } from "./keys.js";
import type { TableClient } from "./table-client.js";

/** How `setup()` creates a missing table. */
export interface CreateTableOptions {
  /** Default `"PAY_PER_REQUEST"` (on-demand): no capacity to plan, no throttling below account limits. */
  billingMode?: "PAY_PER_REQUEST" | "PROVISIONED";
  /** Read capacity units with `"PROVISIONED"`. Default 5. */
  readCapacityUnits?: number;
  /** Write capacity units with `"PROVISIONED"`. Default 5. */
  writeCapacityUnits?: number;
  /** How long to wait for the table to become ACTIVE, in milliseconds. Default 300000. */
  timeoutMs?: number;
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
    AttributeDefinitions: ATTRIBUTE_DEFINITIONS.map((a) => ({ ...a })),
    KeySchema: KEY_SCHEMA.map((k) => ({ ...k })),
    BillingMode: provisioned ? "PROVISIONED" : "PAY_PER_REQUEST",
    ...(provisioned
      ? { ProvisionedThroughput: { ReadCapacityUnits: options.readCapacityUnits ?? 5, WriteCapacityUnits: options.writeCapacityUnits ?? 5 } }
      : {}),
  };
}

/**
 * The table as infrastructure code to copy: a CloudFormation resource (YAML) or a Terraform
 * `aws_dynamodb_table`, on-demand, with TTL on `ttlAttribute` when given.
 *
 * @example
 * ```ts
 * console.log(tableTemplate("terraform", "checkpoints", { ttlAttribute: "expires_at" }));
 * ```
 */
export function tableTemplate(format: "cloudformation" | "terraform", tableName: string, options: { ttlAttribute?: string } = {}): string {
  const ttl = options.ttlAttribute;
  if (format === "cloudformation") {
    return [
      "CheckpointsTable:",
      "  Type: AWS::DynamoDB::Table",
      "  Properties:",
      `    TableName: ${tableName}`,
      "    BillingMode: PAY_PER_REQUEST",
      "    AttributeDefinitions:",
      ...ATTRIBUTE_DEFINITIONS.flatMap((a) => [`      - AttributeName: ${a.AttributeName}`, `        AttributeType: ${a.AttributeType}`]),
      "    KeySchema:",
      ...KEY_SCHEMA.flatMap((k) => [`      - AttributeName: ${k.AttributeName}`, `        KeyType: ${k.KeyType}`]),
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
    ...ATTRIBUTE_DEFINITIONS.flatMap((a) => ["  attribute {", `    name = "${a.AttributeName}"`, `    type = "${a.AttributeType}"`, "  }"]),
    ...(ttl ? ["", "  ttl {", `    attribute_name = "${ttl}"`, "    enabled        = true", "  }"] : []),
    "}",
  ].join("\n");
}

/**
 * Makes sure the table exists with this store's key schema and is ACTIVE: creates it when asked and
 * waits for it; enables TTL on `ttlAttribute` when given.
 */
export async function setupTable(db: TableClient, create: CreateTableOptions | undefined, ttlAttribute: string | undefined): Promise<void> {
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
      await db.send("CreateTable", "setup", new CreateTableCommand(tableDefinition(db.table, create)));
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
  if (ttlAttribute !== undefined) await enableTtl(db, ttlAttribute);
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
