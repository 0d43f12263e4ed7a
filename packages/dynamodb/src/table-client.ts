/**
 * Every request the store sends goes through {@link TableClient}: one command event per request, retries
 * with backoff on throttling, batches cut to DynamoDB's limits with their unprocessed items retried,
 * and the SDK's errors turned into typed ones.
 *
 * @module
 */
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  QueryCommand,
  type BatchGetItemCommandOutput,
  type BatchWriteItemCommandOutput,
  type KeysAndAttributes,
  type QueryCommandInput,
  type QueryCommandOutput,
  type WriteRequest,
} from "@aws-sdk/client-dynamodb";
import { InvalidConfigError, type StoreCommandListener } from "@resumable/core";

import { DynamoDBThrottledError, RETRYABLE_ERRORS, errorName, translateError } from "./errors.js";
import type { Item } from "./item-size.js";
import { PK, SK } from "./keys.js";

/**
 * The part of a `DynamoDBClient` the store uses: `send`. Any object with it fits (a client wrapped
 * for tracing, or one that injects faults in tests).
 */
export interface DynamoDBClientLike {
  send(command: any, options?: any): Promise<any>;
  /** Called by `close()` on clients the store created itself. */
  destroy?(): void;
}

/** How the store retries throttled requests and unprocessed batch items. */
export interface DynamoDBRetryOptions {
  /** Attempts per request (the first included) before {@link DynamoDBThrottledError}. Default 10. */
  maxAttempts?: number;
  /** The first backoff, in milliseconds; each retry doubles it, with full jitter. Default 25. */
  baseDelayMs?: number;
  /** The longest backoff, in milliseconds. Default 2000. */
  maxDelayMs?: number;
}

/** DynamoDB's limits on one batch. */
const BATCH_WRITE_ITEMS = 25;
const BATCH_GET_KEYS = 100;

export type Key = { pk: string; sk: string };

/** Sends one table's requests; see the module comment. */
export class TableClient {
  listener: StoreCommandListener | undefined;
  private readonly maxAttempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(
    readonly client: DynamoDBClientLike,
    readonly table: string,
    readonly store: string,
    readonly endpoint: string,
    retry: DynamoDBRetryOptions = {},
    /** Requests of one operation in flight at once (batches, conditional puts). */
    readonly concurrency = 8,
  ) {
    this.maxAttempts = positiveInteger(retry.maxAttempts ?? 10, "retry.maxAttempts");
    this.baseDelayMs = nonNegative(retry.baseDelayMs ?? 25, "retry.baseDelayMs");
    this.maxDelayMs = nonNegative(retry.maxDelayMs ?? 2000, "retry.maxDelayMs");
  }

  /**
   * Sends one request, retrying throttling and transient server errors with backoff. Every attempt
   * is one command event named `name`.
   */
  async send<O>(name: string, operation: string, command: object): Promise<O> {
    for (let attempt = 1; ; attempt += 1) {
      let output: O;
      try {
        output = (await this.client.send(command)) as O;
      } catch (error) {
        this.listener?.({ command: name });
        const retryable = RETRYABLE_ERRORS.has(errorName(error) ?? "");
        if (!retryable) throw translateError(error, { store: this.store, table: this.table, endpoint: this.endpoint, operation });
        if (attempt >= this.maxAttempts) {
          throw new DynamoDBThrottledError(this.table, operation, attempt, `${errorName(error)}: ${(error as Error).message}`, error);
        }
        await this.backoff(attempt);
        continue;
      }
      this.listener?.({ command: name });
      return output;
    }
  }

  /**
   * Pages of a Query, following `LastEvaluatedKey`. With `firstLimit`, the first page holds at most
   * that many items and later ones as many as DynamoDB returns (1 MB).
   */
  async *query(name: string, operation: string, input: Omit<QueryCommandInput, "TableName">, firstLimit?: number): AsyncGenerator<Item[]> {
    let start: Item | undefined;
    let first = true;
    do {
      const limit = first && firstLimit !== undefined ? { Limit: firstLimit } : {};
      first = false;
      const out = await this.send<QueryCommandOutput>(
        name,
        operation,
        new QueryCommand({ ...input, ...limit, TableName: this.table, ...(start ? { ExclusiveStartKey: start } : {}) }),
      );
      start = out.LastEvaluatedKey as Item | undefined;
      yield (out.Items ?? []) as Item[];
    } while (start);
  }

  /** Every item of a Query. */
  async queryAll(name: string, operation: string, input: Omit<QueryCommandInput, "TableName">): Promise<Item[]> {
    const all: Item[] = [];
    for await (const page of this.query(name, operation, input)) all.push(...page);
    return all;
  }

  /**
   * Writes (puts or deletes) in batches of 25, several batches at once, retrying unprocessed items
   * with backoff until all are written. Items must have distinct keys.
   */
  async batchWrite(operation: string, requests: WriteRequest[]): Promise<void> {
    const batches: WriteRequest[][] = [];
    for (let i = 0; i < requests.length; i += BATCH_WRITE_ITEMS) batches.push(requests.slice(i, i + BATCH_WRITE_ITEMS));
    await mapLimit(batches, this.concurrency, async (batch) => {
      let pending = batch;
      for (let attempt = 1; pending.length > 0; attempt += 1) {
        const out = await this.send<BatchWriteItemCommandOutput>(
          "BatchWriteItem",
          operation,
          new BatchWriteItemCommand({ RequestItems: { [this.table]: pending } }),
        );
        const left = out.UnprocessedItems?.[this.table] ?? [];
        if (left.length === 0) return;
        // Progress restarts the count: only a batch that stops moving gives up.
        if (left.length < pending.length) attempt = 1;
        if (attempt >= this.maxAttempts) {
          throw new DynamoDBThrottledError(this.table, operation, attempt, `${left.length} of ${pending.length} batch items stayed unprocessed`);
        }
        pending = left;
        await this.backoff(attempt);
      }
    });
  }

  /** Puts items in batches; see {@link batchWrite}. */
  putAll(operation: string, items: Item[]): Promise<void> {
    return this.batchWrite(
      operation,
      items.map((Item) => ({ PutRequest: { Item } })),
    );
  }

  /**
   * Gets items by key in batches of 100, several at once, retrying unprocessed keys with backoff.
   * Duplicate keys are fetched once; missing items are simply absent.
   */
  async batchGet(operation: string, keys: Key[], consistentRead: boolean): Promise<Item[]> {
    const unique = [...new Map(keys.map((k) => [`${k.pk}\u0000${k.sk}`, k])).values()];
    const batches: Key[][] = [];
    for (let i = 0; i < unique.length; i += BATCH_GET_KEYS) batches.push(unique.slice(i, i + BATCH_GET_KEYS));
    const results = await mapLimit(batches, this.concurrency, async (batch) => {
      const found: Item[] = [];
      let pending: KeysAndAttributes = { Keys: batch.map((k) => ({ [PK]: { S: k.pk }, [SK]: { S: k.sk } })), ConsistentRead: consistentRead };
      for (let attempt = 1; ; attempt += 1) {
        const out = await this.send<BatchGetItemCommandOutput>(
          "BatchGetItem",
          operation,
          new BatchGetItemCommand({ RequestItems: { [this.table]: pending } }),
        );
        found.push(...((out.Responses?.[this.table] ?? []) as Item[]));
        const left = out.UnprocessedKeys?.[this.table];
        const leftCount = left?.Keys?.length ?? 0;
        if (!left || leftCount === 0) return found;
        if (leftCount < (pending.Keys?.length ?? 0)) attempt = 1;
        if (attempt >= this.maxAttempts) {
          throw new DynamoDBThrottledError(this.table, operation, attempt, `${leftCount} keys of a batch get stayed unprocessed`);
        }
        pending = left;
        await this.backoff(attempt);
      }
    });
    return results.flat();
  }

  /** Waits before retry `attempt` (exponential backoff with full jitter, capped). */
  backoff(attempt: number): Promise<void> {
    const cap = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
    return new Promise((resolve) => setTimeout(resolve, Math.random() * cap));
  }
}

/**
 * Runs `fn` over `items`, at most `limit` at a time; results in input order. After a failure no item
 * is started, and the first error is thrown only once every call in flight has settled: an
 * operation never returns while requests it sent may still land (a caller that retries, or reads
 * what a failed write left, must see it all).
 */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  const worker = async () => {
    while (next < items.length && !failure) {
      const index = next++;
      try {
        results[index] = await fn(items[index]!);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) throw new InvalidConfigError(name, `DynamoDBStore: "${name}" must be a positive integer, got ${String(value)}.`);
  return value;
}

function nonNegative(value: number, name: string): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new InvalidConfigError(name, `DynamoDBStore: "${name}" must be a non-negative number of milliseconds, got ${String(value)}.`);
  }
  return value;
}
