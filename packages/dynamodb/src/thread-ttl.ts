/**
 * Whole-thread TTL: every item of a thread carries the same expiry epoch, so DynamoDB's TTL removes a
 * thread as a whole, never a checkpoint's blobs before the checkpoint.
 *
 * - A new thread expires `seconds` after its first write. Its later items get the same epoch.
 * - When a checkpoint is written and the epoch is less than `seconds - refreshSeconds` away, every
 *   item of the thread is re-stamped to `now + seconds` (dependents first, checkpoints last), so an
 *   active thread expires between `seconds - refreshSeconds` and `seconds` after its last checkpoint,
 *   at the cost of one update per item once per `refreshSeconds`.
 * - DynamoDB deletes expired items up to days late, and not all at once: readers treat a checkpoint
 *   whose epoch has passed as gone. Its dependents carry an epoch at least as late (re-stamping does
 *   them first; a re-stamp cut short by a crash is redone by the next checkpoint), so a visible
 *   checkpoint never misses a part.
 *
 * @module
 */
import { UpdateItemCommand } from "@aws-sdk/client-dynamodb";
import { InvalidConfigError } from "@resumable/core";

import { errorName } from "./errors.js";
import { RESERVED_ATTRIBUTES } from "./items.js";
import type { Item } from "./item-size.js";
import { LEASE_KEY, PK, SK } from "./keys.js";
import { mapLimit, type TableClient } from "./table-client.js";

/** Options of the store's whole-thread TTL. */
export interface DynamoDBTtlOptions {
  /** How long a thread lives after its last checkpoint, in seconds. */
  seconds: number;
  /** The epoch-seconds attribute on every item, which the table's TTL is enabled on. Default `"expires_at"`. */
  attribute?: string;
  /**
   * How stale the epoch may get before a checkpoint re-stamps the whole thread, in seconds. Default:
   * a tenth of `seconds`, at most a day.
   */
  refreshSeconds?: number;
  /** Have `setup()` enable TTL on the table for {@link attribute} (`UpdateTimeToLive`). Default `false`. */
  enableOnTable?: boolean;
}

const nowSeconds = (): number => Date.now() / 1000;

/** The epochs of the threads this process writes, and the re-stamping. */
export class ThreadTtl {
  readonly attribute: string;
  readonly seconds: number;
  readonly refreshSeconds: number;
  readonly enableOnTable: boolean;
  private readonly epochs = new Map<string, number>();

  constructor(
    options: DynamoDBTtlOptions,
    private readonly db: TableClient,
  ) {
    const { seconds } = options;
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 1) {
      throw new InvalidConfigError("ttl.seconds", `DynamoDBStore: "ttl.seconds" must be a number of seconds, at least 1, got ${String(seconds)}.`);
    }
    this.seconds = seconds;
    this.refreshSeconds = options.refreshSeconds ?? Math.min(86_400, seconds / 10);
    if (!(this.refreshSeconds >= 0 && this.refreshSeconds <= seconds)) {
      throw new InvalidConfigError("ttl.refreshSeconds", `DynamoDBStore: "ttl.refreshSeconds" must be between 0 and ttl.seconds (${seconds}), got ${String(options.refreshSeconds)}.`);
    }
    this.attribute = options.attribute ?? "expires_at";
    if (typeof this.attribute !== "string" || this.attribute === "" || RESERVED_ATTRIBUTES.has(this.attribute)) {
      throw new InvalidConfigError(
        "ttl.attribute",
        `DynamoDBStore: "ttl.attribute" must be a non-empty name other than the store's own (${[...RESERVED_ATTRIBUTES].join(", ")}), got ${JSON.stringify(this.attribute)}.`,
      );
    }
    this.enableOnTable = options.enableOnTable ?? false;
  }

  /** Whether a checkpoint item is still visible (its epoch, if any, is in the future). */
  live(item: Item): boolean {
    const epoch = item[this.attribute]?.N;
    return epoch === undefined || Number(epoch) > nowSeconds();
  }

  /** Remembers the epoch of a thread from a live checkpoint item read from it. */
  note(threadId: string, item: Item): void {
    const epoch = item[this.attribute]?.N;
    if (epoch !== undefined && this.live(item)) this.epochs.set(threadId, Math.max(this.epochs.get(threadId) ?? 0, Number(epoch)));
  }

  forget(threadId: string): void {
    this.epochs.delete(threadId);
  }

  /** The epoch attribute for new items of the thread; before a checkpoint, re-stamps the thread when due. */
  async stamp(threadId: string, operation: string, checkpoint: boolean): Promise<Item> {
    const now = nowSeconds();
    let epoch = this.epochs.get(threadId) ?? (await this.lookup(threadId, operation));
    const fresh = Math.ceil(now + this.seconds);
    if (epoch === undefined || epoch <= now) {
      // A new thread, or one already expired: its old items stay hidden and are left to DynamoDB.
      epoch = fresh;
    } else if (checkpoint && epoch - now < this.seconds - this.refreshSeconds) {
      await this.restamp(threadId, fresh, operation);
      epoch = fresh;
    }
    this.epochs.set(threadId, epoch);
    return { [this.attribute]: { N: String(epoch) } };
  }

  /** The epoch of the thread's newest live checkpoint, read from the table. */
  private async lookup(threadId: string, operation: string): Promise<number | undefined> {
    for await (const page of this.db.query(`Query ${this.attribute}`, operation, {
      KeyConditionExpression: "#pk = :pk AND begins_with(#sk, :c)",
      ExpressionAttributeNames: { "#pk": PK, "#sk": SK, "#e": this.attribute },
      ExpressionAttributeValues: { ":pk": { S: threadId }, ":c": { S: "c|" } },
      ProjectionExpression: "#e",
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: 10,
    })) {
      for (const item of page) if (this.live(item) && item[this.attribute]?.N !== undefined) return Number(item[this.attribute]!.N);
    }
    return undefined;
  }

  /** Sets `epoch` on every item of the thread: dependents first, checkpoints last. */
  private async restamp(threadId: string, epoch: number, operation: string): Promise<void> {
    const items = await this.db.queryAll(`Query thread for ${this.attribute}`, operation, {
      KeyConditionExpression: "#pk = :pk",
      ExpressionAttributeNames: { "#pk": PK, "#sk": SK, "#e": this.attribute },
      ExpressionAttributeValues: { ":pk": { S: threadId } },
      ProjectionExpression: "#pk, #sk, #e",
      ConsistentRead: true,
    });
    // Never the lease item (manyWorkers): it must outlive the thread, or its tokens would start over.
    const stale = items.filter((item) => item[SK]!.S !== LEASE_KEY && Number(item[this.attribute]?.N ?? 0) < epoch);
    const update = (item: Item) =>
      this.db
        .send(
          `UpdateItem ${this.attribute}`,
          operation,
          new UpdateItemCommand({
            TableName: this.db.table,
            Key: { [PK]: item[PK]!, [SK]: item[SK]! },
            UpdateExpression: "SET #e = :e",
            // Never recreate an item deleted meanwhile.
            ConditionExpression: "attribute_exists(#pk)",
            ExpressionAttributeNames: { "#e": this.attribute, "#pk": PK },
            ExpressionAttributeValues: { ":e": { N: String(epoch) } },
          }),
        )
        .catch((error: unknown) => {
          if (errorName(error) !== "ConditionalCheckFailedException") throw error;
        });
    const isCheckpoint = (item: Item) => item[SK]!.S!.startsWith("c|");
    await mapLimit(stale.filter((i) => !isCheckpoint(i)), this.db.concurrency, update);
    await mapLimit(stale.filter(isCheckpoint), this.db.concurrency, update);
  }
}
