/**
 * The DynamoDB {@link CheckpointStore}: one table, one partition per thread, atomic without
 * transactions (the `manyWorkers` option, leases and thread status, uses them).
 *
 * @module
 */
import { randomBytes } from "node:crypto";

import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type TransactWriteItem,
  type UpdateItemCommandOutput,
  type DynamoDBClientConfig,
  type GetItemCommandOutput,
  type QueryCommandInput,
  type ScanCommandOutput,
} from "@aws-sdk/client-dynamodb";
import {
  ID_RULES,
  InvalidConfigError,
  LeaseLostError,
  StoreClosedError,
  THREAD_STATES,
  ValueTooLargeError,
  applyPatchToRecord,
  recordOfWrite,
  canonicalJsonText,
  checkIdentifier,
  type BlobRecord,
  type CheckpointRecord,
  type CheckpointStore,
  type ChunkRecord,
  type DeleteRecordsRequest,
  type HistoryAncestor,
  type HistoryQuery,
  type HistoryResult,
  type Lease,
  type LeaseClaim,
  type LeaseFence,
  type LeaseState,
  type ListCheckpointsQuery,
  type ListThreadsQuery,
  type PatchThreadStatusRequest,
  type ThreadState,
  type ThreadStatusPatch,
  type ThreadStatusRecord,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type SerializedValue,
  type StoreCapabilities,
  type StoreCommandListener,
  type StoredCheckpoint,
  type ThreadRecords,
  type ThreadScope,
  type WriteRecord,
} from "@resumable/core";

import { DynamoDBTransactionError, errorName } from "./errors.js";
import { DEFAULT_MAX_ITEM_BYTES, DYNAMODB_ITEM_LIMIT, itemSize, type Item } from "./item-size.js";
import {
  blobItem,
  checkpointItem,
  chunkItems,
  fitItem,
  readBlob,
  readCheckpoint,
  readChunk,
  readWrite,
  spillRef,
  unspill,
  visibleWrites,
  writeCommitItem,
  writeItem,
} from "./items.js";
import { LEASE_KEY, PK, SK, blobKey, checkpointKey, chunkKey, checkpointPrefix, isUnnamedNs, parseCheckpointKey, prefixEnd, writesPrefix } from "./keys.js";
import { STATUS_INDEX, STATUS_INDEX_PK, STATUS_INDEX_SK, leaseKey, readLease, readStatus, statusIndexKey, statusItem, statusKey, timeKey } from "./many-workers.js";
import { ThreadListing, removalOf } from "./retention.js";
import { setupTable, type CreateTableOptions } from "./table.js";
import { TableClient, mapLimit, type DynamoDBClientLike, type DynamoDBRetryOptions, type Key } from "./table-client.js";
import { ThreadTtl, type DynamoDBTtlOptions } from "./thread-ttl.js";

/** Options of {@link DynamoDBStore}. */
export interface DynamoDBStoreOptions {
  /** The table holding every thread. */
  tableName: string;
  /**
   * Let `setup()` create the table when it is missing (and wait until it is ACTIVE). Default `false`:
   * `setup()` only checks that the table exists with this store's key schema.
   */
  createTable?: boolean | CreateTableOptions;
  /** Whole-thread TTL: an expiry epoch on every item of a thread (see {@link DynamoDBTtlOptions}). */
  ttl?: DynamoDBTtlOptions;
  /** Retries of throttled requests and unprocessed batch items. */
  retry?: DynamoDBRetryOptions;
  /**
   * The largest item the store writes, counting attribute names and values as DynamoDB does. Default
   * 400,000 (DynamoDB's "400 KB" is 409,600 on AWS and dynalite, 405,000 on moto 5.2.5).
   */
  maxItemBytes?: number;
  /** Checkpoints per Query page of `listCheckpoints`. Default 50. */
  pageSize?: number;
  /** Strongly consistent reads (default `true`): a process that resumes a thread sees every write. */
  consistentRead?: boolean;
  /** Requests of one operation in flight at once (batches, conditional puts). Default 8. */
  concurrency?: number;
  /** Names the endpoint in error messages. Default: taken from the client when it says. */
  endpoint?: string;
  /**
   * Several worker processes on one table (default `false`): thread leases with fencing tokens and a
   * status per thread (`capabilities.leases` and `capabilities.threadStatus`, what
   * `@resumable/recovery` needs). Adds a lease item and a status item per thread and a global
   * secondary index of the status items (`threads-by-status`, created or added by `setup()` with
   * `createTable`). Needs `TransactWriteItems`: a fenced write's commit point and a ConditionCheck on
   * the lease item are one transaction, as are a root checkpoint and its status. `setup()` refuses an
   * endpoint without transactions (dynalite) with an `InvalidConfigError`. Off, nothing of this is
   * written or read and no request changes.
   */
  manyWorkers?: boolean;
}

/** Options of {@link DynamoDBStore.connect}: the store's and the client's. */
export interface DynamoDBConnectOptions extends DynamoDBStoreOptions {
  /** Passed to `new DynamoDBClient(...)`: region, endpoint, credentials... */
  clientConfig?: DynamoDBClientConfig;
}

const STORE = "DynamoDBStore";
/** Bytes the items of a fenced special-channel putWrites may take in its transaction (DynamoDB allows 4 MB in all). */
const TRANSACTION_BUDGET = 3_400_000;
/** Actions one TransactWriteItems may hold. */
const MAX_TRANSACTION_ACTIONS = 100;
/** Actions of a fenced removal's transactions: as many as a BatchWriteItem holds, and what moto 5.2.5 accepts. */
const REMOVAL_TRANSACTION_ACTIONS = 25;
/** What a status action reports when an earlier try of its commit was applied after all. */
const LANDED = Symbol("landed");
/** Tries of one commit through refused status revisions, conflicts and throttling. */
const MAX_COMMIT_ATTEMPTS = 10;
/** Cancellation reasons that a retry may get past. */
const RETRYABLE_REASONS = new Set(["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"]);
/** Bytes a chunk item needs besides its data: keys at their longest, attribute names, `n`. */
const CHUNK_OVERHEAD = 1024;
const HASH_RULE = { field: "chunk hash", maxBytes: 512 };

type Value = SerializedValue;

/**
 * A {@link CheckpointStore} on one DynamoDB table.
 *
 * - `putCheckpoint` writes chunks and blobs first (BatchWriteItem), the checkpoint item last (PutItem):
 *   that item is the commit point, so a reader never sees a checkpoint whose parts are missing.
 * - `putWrites` stores chunks first, then each write with a conditional PutItem (`"ignore"`) or a
 *   batch (`"upsert"`). Several `"ignore"` writes carry a batch token and are visible only once the
 *   batch's commit item, written after them, exists: a call cut short shows none of its writes.
 * - Reads are strongly consistent Queries in reverse sort-key order; a checkpoint comes back with its
 *   blobs (BatchGetItem, a BETWEEN Query per delta range), its writes (one Query) and its chunks.
 * - With `manyWorkers` (off by default; needs TransactWriteItems), leases and thread status: a fenced
 *   write's commit point is a transaction with a ConditionCheck on the thread's lease item, a root
 *   checkpoint's status is written in the same transaction, and `listThreads` pages a sparse GSI,
 *   reading every entry back consistently.
 *
 * @example
 * ```ts
 * const store = new DynamoDBStore(new DynamoDBClient({ region: "eu-west-1" }), { tableName: "checkpoints", createTable: true });
 * await store.setup();
 * const checkpointer = new ResumableSaver(store);
 * ```
 */
export class DynamoDBStore implements CheckpointStore {
  readonly capabilities: Partial<StoreCapabilities>;
  /** The client requests go through; left open by `close()` unless the store created it. */
  readonly client: DynamoDBClientLike;
  readonly tableName: string;
  private readonly db: TableClient;
  private readonly ttl: ThreadTtl | undefined;
  private readonly createTable: CreateTableOptions | undefined;
  private readonly itemLimit: number;
  private readonly chunkBytes: number;
  private readonly pageSize: number;
  private readonly consistent: boolean;
  /** putWrites calls in flight per thread: a checkpoint item waits for them (see putCheckpoint). */
  private readonly writesInFlight = new Map<string, Set<Promise<void>>>();
  private readonly manyWorkers: boolean;
  private ownsClient = false;
  private closed = false;

  constructor(client: DynamoDBClientLike, options: DynamoDBStoreOptions) {
    if (typeof client?.send !== "function") {
      throw new InvalidConfigError("client", `${STORE}: the first argument must be a DynamoDBClient (anything with send()), got ${typeof client}.`);
    }
    const tableName = options?.tableName;
    if (typeof tableName !== "string" || !/^[a-zA-Z0-9_.-]{3,255}$/.test(tableName)) {
      throw new InvalidConfigError("tableName", `${STORE}: "tableName" must be 3 to 255 characters of a-z, A-Z, 0-9, "_", "-" and ".", got ${JSON.stringify(tableName)}.`);
    }
    this.client = client;
    this.tableName = tableName;
    this.db = new TableClient(client, tableName, `${STORE} (table "${tableName}")`, options.endpoint ?? "its endpoint", options.retry, options.concurrency);
    this.ttl = options.ttl ? new ThreadTtl(options.ttl, this.db) : undefined;
    this.createTable = options.createTable === true ? {} : options.createTable || undefined;
    this.itemLimit = options.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    const overhead = CHUNK_OVERHEAD + (this.ttl ? this.ttl.attribute.length * 3 + 21 : 0);
    if (!Number.isInteger(this.itemLimit) || this.itemLimit < overhead + 1024 || this.itemLimit > DYNAMODB_ITEM_LIMIT) {
      throw new InvalidConfigError("maxItemBytes", `${STORE}: "maxItemBytes" must be an integer from ${overhead + 1024} to ${DYNAMODB_ITEM_LIMIT}, got ${String(this.itemLimit)}.`);
    }
    this.chunkBytes = this.itemLimit - overhead;
    this.pageSize = Math.max(1, Math.floor(options.pageSize ?? 50));
    this.consistent = options.consistentRead ?? true;
    this.manyWorkers = options.manyWorkers === true;
    this.capabilities = {
      maxItemBytes: this.chunkBytes,
      nativeMetadataFilter: true,
      persistent: true,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      retention: true,
      ...(this.manyWorkers ? { leases: true, threadStatus: true } : {}),
    };
  }

  /** A store with a `DynamoDBClient` of its own (from `clientConfig`), destroyed by `close()`. Does not run `setup()`. */
  static async connect(options: DynamoDBConnectOptions): Promise<DynamoDBStore> {
    const { clientConfig = {}, ...rest } = options;
    const client = new DynamoDBClient(clientConfig);
    const endpoint = rest.endpoint ?? (typeof clientConfig.endpoint === "string" ? clientConfig.endpoint : undefined);
    const store = new DynamoDBStore(client, { ...rest, ...(endpoint ? { endpoint } : {}) });
    store.ownsClient = true;
    return store;
  }

  instrument(listener: StoreCommandListener | undefined): void {
    this.db.listener = listener;
  }

  /**
   * Checks the table (creating it when `createTable` is set, and waiting until it is ACTIVE) and,
   * with `ttl.enableOnTable`, enables TTL on it. Idempotent; safe from several processes at once.
   */
  async setup(): Promise<void> {
    this.check();
    await setupTable(this.db, this.createTable, this.ttl?.enableOnTable ? this.ttl.attribute : undefined, this.manyWorkers);
  }

  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    this.check();
    const { record } = request;
    checkRecord(record);
    for (const blob of request.blobs) checkBlobKey(blob.channel, blob.version);
    const extra = await this.stamp(record.threadId, "putCheckpoint", true);
    const spill: Item[] = [];
    const parts = [
      ...this.chunkItems(record.threadId, request.chunks, extra),
      ...request.blobs.map((blob) =>
        this.fit(blobItem(record.threadId, record.checkpointNs, blob, extra), extra, spill, () => `channel "${blob.channel}" at version ${blob.version}`),
      ),
    ];
    const main = this.fit(checkpointItem(record, extra), extra, spill, () => `checkpoint ${record.checkpointId}`);
    // Dependents first, in any order; the checkpoint item, written last, is what makes them visible.
    if (parts.length + spill.length > 0) await this.db.putAll("putCheckpoint", uniqueItems([...parts, ...spill]));
    // LangGraph issues a checkpoint's own input writes right after put(): the checkpoint must not
    // become durable before the writes this process has in flight for its thread, or a crash leaves
    // an input checkpoint whose input is lost.
    await Promise.allSettled([...(this.writesInFlight.get(record.threadId) ?? [])]);
    if (request.fence === undefined && request.status === undefined) {
      await this.db.send("PutItem checkpoint", "putCheckpoint", new PutItemCommand({ TableName: this.tableName, Item: main }));
      return;
    }
    // manyWorkers: the checkpoint item, the lease check and the status are one transaction.
    const { status } = request;
    await this.commit("putCheckpoint", record.threadId, request.fence, [{ Put: { TableName: this.tableName, Item: main } }], async (statusRefused) => {
      // Refused: the stored status names a later checkpoint and stays (a late put never moves a thread back).
      if (status === undefined || statusRefused) return undefined;
      const next = recordOfWrite(record.threadId, record.checkpointId, status, undefined)!;
      return {
        Put: {
          TableName: this.tableName,
          Item: this.statusItemOf(next, extra),
          ConditionExpression: "attribute_not_exists(#pk) OR #ci <= :ci",
          ExpressionAttributeNames: { "#pk": PK, "#ci": "ci" },
          ExpressionAttributeValues: { ":ci": { S: record.checkpointId } },
        },
      };
    });
  }

  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check();
    const inFlight = this.writesInFlight.get(request.threadId) ?? new Set<Promise<void>>();
    this.writesInFlight.set(request.threadId, inFlight);
    const done = this.storeWrites(request);
    inFlight.add(done);
    try {
      await done;
    } finally {
      inFlight.delete(done);
      if (inFlight.size === 0 && this.writesInFlight.get(request.threadId) === inFlight) this.writesInFlight.delete(request.threadId);
    }
  }

  private async storeWrites(request: PutWritesRequest): Promise<void> {
    checkScope(request);
    checkIdentifier(request.checkpointId, ID_RULES.checkpointId, STORE);
    for (const write of request.writes) checkWrite(write);
    if (request.writes.length === 0 && request.chunks.length === 0) return;
    const { threadId, checkpointNs: ns, checkpointId } = request;
    const extra = await this.stamp(threadId, "putWrites", false);
    const spill: Item[] = [];
    const byKey = new Map<string, WriteRecord>();
    // A batch refuses duplicate keys: "ignore" keeps the first of a (task, idx), "upsert" the last.
    for (const write of request.writes) if (request.mode === "upsert" || !byKey.has(`${write.taskId}\u0000${write.idx}`)) byKey.set(`${write.taskId}\u0000${write.idx}`, write);
    // Several conditional puts are several requests, and a crash between them would leave part of a
    // task's writes, which LangGraph takes for the whole task (it does not run a task that has writes):
    // the state update without the edge to the next node. So the writes of such a batch carry a token
    // and stay invisible until the batch's commit item, written after all of them, exists.
    const { fence, status } = request;
    // With a fence, every "ignore" call is a batch, even of one write: its commit item is the one item
    // the transaction with the lease check has to write.
    const token = request.mode === "ignore" && (byKey.size > 1 || (fence !== undefined && byKey.size > 0)) ? randomBytes(12).toString("base64url") : undefined;
    // A fenced "upsert" writes its items in the transaction (at most 4 MB in all): each gets a share.
    const limit = fence !== undefined && request.mode === "upsert" ? Math.min(this.itemLimit, Math.floor(TRANSACTION_BUDGET / Math.max(1, byKey.size))) : this.itemLimit;
    const items = [...byKey.values()].map((write) =>
      fitItem(writeItem(threadId, ns, checkpointId, write, extra, token), limit, this.chunkBytes, extra, spill, () => `write "${write.channel}" of task ${write.taskId}`),
    );
    const chunks = [...this.chunkItems(threadId, request.chunks, extra), ...spill];
    // Chunks first: a write is visible as soon as it (or its batch's commit item) lands.
    if (chunks.length > 0) await this.db.putAll("putWrites", uniqueItems(chunks));
    const patch = status === undefined ? undefined : this.statusPatcher(threadId, status, "putWrites");
    if (request.mode === "upsert") {
      if (fence !== undefined) {
        if (items.length > MAX_TRANSACTION_ACTIONS - 2) {
          throw new InvalidConfigError("writes", `${STORE}: a fenced putWrites of special channels holds ${items.length} writes; one transaction takes at most ${MAX_TRANSACTION_ACTIONS - 2}.`);
        }
        await this.commit("putWrites", threadId, fence, items.map((Item) => ({ Put: { TableName: this.tableName, Item } })), patch);
        return;
      }
      // Special channels only; one request (BatchWriteItem for several) replaces them.
      if (items.length > 1) await this.db.putAll("putWrites", items);
      else if (items.length === 1) await this.db.send("PutItem write", "putWrites", new PutItemCommand({ TableName: this.tableName, Item: items[0] }));
      if (patch) await this.commit("putWrites", threadId, undefined, [], patch);
      return;
    }
    const stored = await mapLimit(items, this.db.concurrency, (Item) => this.putIfAbsent(Item));
    const taken = items.filter((_, i) => !stored[i]);
    // An item already at a write's key keeps it ("ignore"), unless it belongs to a batch that was never
    // committed (a crash cut it short, so no reader ever saw it): this retry of the task replaces it.
    let replaced = 0;
    if (taken.length > 0) {
      const existing = await this.db.queryAll("Query writes", "putWrites", {
        ...this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": writesPrefix(ns, checkpointId), ":hi": prefixEnd(writesPrefix(ns, checkpointId)) }, { "#bt": "bt", "#wc": "wc" }),
        ProjectionExpression: "#sk, #bt, #wc",
      });
      const visible = new Set(visibleWrites(existing).map((item) => item[SK]!.S!));
      const torn = new Map(existing.filter((item) => item["bt"]?.S !== undefined && !visible.has(item[SK]!.S!)).map((item) => [item[SK]!.S!, item["bt"]!.S!]));
      const retried = await mapLimit(
        taken.filter((item) => torn.has(item[SK]!.S!)),
        this.db.concurrency,
        (Item) => this.putIfAbsent(Item, torn.get(Item[SK]!.S!)),
      );
      replaced = retried.filter(Boolean).length;
    }
    if (fence !== undefined) {
      // The commit item is the commit point: written only while the lease holds, with the status change.
      const commitItem = token === undefined ? [] : [{ Put: { TableName: this.tableName, Item: writeCommitItem(threadId, ns, checkpointId, token, extra) } }];
      await this.commit("putWrites", threadId, fence, commitItem, patch);
      return;
    }
    if (token !== undefined && taken.length - replaced < items.length) {
      await this.db.send("PutItem write commit", "putWrites", new PutItemCommand({ TableName: this.tableName, Item: writeCommitItem(threadId, ns, checkpointId, token, extra) }));
    }
    if (patch) await this.commit("putWrites", threadId, undefined, [], patch);
  }

  /**
   * Puts a write item unless its key holds one already (or, with `replacing`, unless it holds anything
   * but a write of that uncommitted batch). Whether it was stored.
   */
  private async putIfAbsent(Item: Item, replacing?: string): Promise<boolean> {
    try {
      await this.db.send(
        "PutItem write",
        "putWrites",
        new PutItemCommand({
          TableName: this.tableName,
          Item,
          ...(replacing === undefined
            ? { ConditionExpression: "attribute_not_exists(#pk)", ExpressionAttributeNames: { "#pk": PK } }
            : { ConditionExpression: "#bt = :bt", ExpressionAttributeNames: { "#bt": "bt" }, ExpressionAttributeValues: { ":bt": { S: replacing } } }),
        }),
      );
      return true;
    } catch (error) {
      // "ignore": the first write of this (task, idx) is already stored, and stays.
      if (errorName(error) !== "ConditionalCheckFailedException") throw error;
      return false;
    }
  }

  // -------------------------------------------------------------------------------------------------
  // manyWorkers: leases, fencing and thread status (see many-workers.ts for the items).
  // -------------------------------------------------------------------------------------------------

  /**
   * Writes a commit point: the actions, with a ConditionCheck on the lease item first when `fence` is
   * given and the status action `status` returns last, as one TransactWriteItems (one conditional
   * PutItem when a single put needs no lease check). A refused lease check is {@link LeaseLostError};
   * a refused status action calls `status(true)` again (a patch re-reads the record; a put's status
   * gives way to a later checkpoint's) and retries; transaction conflicts and throttling are retried
   * with backoff; anything else is {@link DynamoDBTransactionError}.
   */
  private async commit(
    operation: string,
    threadId: string,
    fence: LeaseFence | undefined,
    actions: TransactWriteItem[],
    status?: (refused: boolean) => Promise<TransactWriteItem | undefined | typeof LANDED>,
  ): Promise<void> {
    let refused = false;
    for (let attempt = 1; ; attempt += 1) {
      const found = status ? await status(refused) : undefined;
      // An earlier try of this commit landed (the status action is in the same transaction as the rest).
      if (found === LANDED) return;
      const statusAction = found;
      const items: TransactWriteItem[] = [...(fence ? [this.fenceCheck(threadId, fence)] : []), ...actions, ...(statusAction ? [statusAction] : [])];
      if (items.length === 0) return;
      let codes: string[];
      let cause: unknown;
      const single = items[0]!.Put;
      if (fence === undefined && items.length === 1 && single) {
        try {
          await this.db.send(statusAction ? "PutItem status" : "PutItem checkpoint", operation, new PutItemCommand(single));
          return;
        } catch (error) {
          if (errorName(error) !== "ConditionalCheckFailedException") throw error;
          codes = ["ConditionalCheckFailed"];
          cause = error;
        }
      } else {
        try {
          await this.db.send(`TransactWriteItems ${operation}`, operation, new TransactWriteItemsCommand({ TransactItems: items }));
          return;
        } catch (error) {
          if (errorName(error) !== "TransactionCanceledException") throw error;
          const reasons = (error as { CancellationReasons?: Array<{ Code?: string }> }).CancellationReasons ?? [];
          codes = items.map((_, i) => reasons[i]?.Code ?? "None");
          cause = error;
        }
      }
      if (fence !== undefined && codes[0] === "ConditionalCheckFailed") throw await this.leaseLost(threadId, fence, operation);
      const last = items.length - 1;
      if (statusAction !== undefined && codes[last] === "ConditionalCheckFailed" && codes.every((c, i) => i === last || c === "None")) {
        refused = true;
        if (attempt < MAX_COMMIT_ATTEMPTS) continue;
      } else if (codes.some((c) => RETRYABLE_REASONS.has(c)) && codes.every((c) => c === "None" || RETRYABLE_REASONS.has(c)) && attempt < MAX_COMMIT_ATTEMPTS) {
        await this.db.backoff(attempt);
        continue;
      }
      throw new DynamoDBTransactionError(this.tableName, operation, codes, cause);
    }
  }

  /** The ConditionCheck of a fenced write: the lease item still holds the token and was not released. */
  private fenceCheck(threadId: string, fence: LeaseFence): TransactWriteItem {
    return {
      ConditionCheck: {
        TableName: this.tableName,
        Key: leaseKey(threadId),
        ConditionExpression: "#tk = :tk AND #rl = :f",
        ExpressionAttributeNames: { "#tk": "tk", "#rl": "rl" },
        ExpressionAttributeValues: { ":tk": { N: String(fence.token) }, ":f": { BOOL: false } },
      },
    };
  }

  /** The error of a refused fenced call, with the thread's current token and holder (one GetItem). */
  private async leaseLost(threadId: string, fence: LeaseFence, operation: string): Promise<LeaseLostError> {
    const lease = await this.readLease(threadId, operation);
    return new LeaseLostError(threadId, fence.token, lease ? { token: lease.token, holder: lease.released ? null : lease.workerId } : {}, operation);
  }

  private async readLease(threadId: string, operation: string): Promise<LeaseState | undefined> {
    const out = await this.db.send<GetItemCommandOutput>("GetItem lease", operation, new GetItemCommand({ TableName: this.tableName, Key: leaseKey(threadId), ConsistentRead: true }));
    return out.Item ? readLease(threadId, out.Item as Item) : undefined;
  }

  /** The thread's status item (strongly consistent), unless missing or expired. */
  private async readStatusItem(threadId: string, operation: string): Promise<Item | undefined> {
    const out = await this.db.send<GetItemCommandOutput>("GetItem status", operation, new GetItemCommand({ TableName: this.tableName, Key: statusKey(threadId), ConsistentRead: true }));
    const item = out.Item as Item | undefined;
    return item && this.live(item) ? item : undefined;
  }

  /** A status item for `record`, with a new revision, checked against the item limit. */
  private statusItemOf(record: ThreadStatusRecord, extra: Item): Item {
    const item = statusItem(record, extra, randomBytes(9).toString("base64url"));
    const size = itemSize(item);
    if (size > this.itemLimit) {
      throw new ValueTooLargeError(`the status of thread ${JSON.stringify(record.threadId)}`, size, this.itemLimit, "Its error message and interrupt values must fit one item.");
    }
    return item;
  }

  /**
   * The status action of a commit that applies `patch`: each try reads the status and returns the put
   * of the patched status (conditional on the revision read), `undefined` when the thread has no
   * status or it names another checkpoint, or {@link LANDED} when an earlier try was applied.
   */
  private statusPatcher(
    threadId: string,
    patch: ThreadStatusPatch,
    operation: string,
    found?: (record: ThreadStatusRecord | undefined) => void,
  ): () => Promise<TransactWriteItem | undefined | typeof LANDED> {
    // The revision the last try wrote, across the tries of one commit.
    let written: string | undefined;
    return async () => {
      const item = await this.readStatusItem(threadId, operation);
      // The item carries the revision an earlier try of this patch wrote: that try landed and only its
      // response was lost (a 500 or a dropped connection, then a retry refused by the revision).
      // Applying the patch again would count an attempt twice.
      if (item && written !== undefined && item["rv"]?.S === written) {
        found?.(readStatus(item));
        return LANDED;
      }
      const next = item ? applyPatchToRecord(readStatus(item), patch) : undefined;
      found?.(next);
      if (!item || !next) return undefined;
      const epoch = this.ttl ? item[this.ttl.attribute] : undefined;
      const put = this.statusItemOf(next, this.ttl && epoch ? { [this.ttl.attribute]: epoch } : {});
      written = put["rv"]!.S!;
      return {
        Put: {
          TableName: this.tableName,
          Item: put,
          ConditionExpression: "#rv = :rv",
          ExpressionAttributeNames: { "#rv": "rv" },
          ExpressionAttributeValues: { ":rv": item["rv"] ?? { S: "" } },
        },
      };
    };
  }

  /** Claims the thread's lease item with one conditional UpdateItem (the claiming process's clock judges expiry). */
  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    this.check();
    this.checkManyWorkers("claimLease");
    checkIdentifier(claim.threadId, ID_RULES.threadId, STORE);
    checkLeaseArgs(claim.workerId, claim.ttlMs);
    const now = Date.now();
    try {
      const out = await this.db.send<UpdateItemCommandOutput>(
        "UpdateItem claim lease",
        "claimLease",
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: leaseKey(claim.threadId),
          UpdateExpression: "SET #tk = if_not_exists(#tk, :zero) + :one, #wk = :w, #ex = :ex, #rl = :f",
          ConditionExpression: "attribute_not_exists(#pk) OR #rl = :t OR #wk = :w OR #ex <= :now",
          ExpressionAttributeNames: { "#pk": PK, "#tk": "tk", "#wk": "wk", "#ex": "ex", "#rl": "rl" },
          ExpressionAttributeValues: {
            ":zero": { N: "0" },
            ":one": { N: "1" },
            ":w": { S: claim.workerId },
            ":ex": { N: String(now + claim.ttlMs) },
            ":now": { N: String(now) },
            ":f": { BOOL: false },
            ":t": { BOOL: true },
          },
          ReturnValues: "ALL_NEW",
        }),
      );
      const { released: _released, ...lease } = readLease(claim.threadId, out.Attributes as Item);
      return lease;
    } catch (error) {
      // Held by another worker, unexpired.
      if (errorName(error) === "ConditionalCheckFailedException") return undefined;
      throw error;
    }
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.check();
    this.checkManyWorkers("renewLease");
    checkIdentifier(lease.threadId, ID_RULES.threadId, STORE);
    checkLeaseArgs(lease.workerId, ttlMs);
    try {
      const out = await this.db.send<UpdateItemCommandOutput>(
        "UpdateItem renew lease",
        "renewLease",
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: leaseKey(lease.threadId),
          UpdateExpression: "SET #ex = :ex",
          ConditionExpression: "#tk = :tk AND #rl = :f",
          ExpressionAttributeNames: { "#tk": "tk", "#ex": "ex", "#rl": "rl" },
          ExpressionAttributeValues: { ":tk": { N: String(lease.token) }, ":ex": { N: String(Date.now() + ttlMs) }, ":f": { BOOL: false } },
          ReturnValues: "ALL_NEW",
        }),
      );
      const { released: _released, ...renewed } = readLease(lease.threadId, out.Attributes as Item);
      return renewed;
    } catch (error) {
      if (errorName(error) !== "ConditionalCheckFailedException") throw error;
      throw await this.leaseLost(lease.threadId, lease, "renewLease");
    }
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.check();
    this.checkManyWorkers("releaseLease");
    checkIdentifier(lease.threadId, ID_RULES.threadId, STORE);
    try {
      await this.db.send(
        "UpdateItem release lease",
        "releaseLease",
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: leaseKey(lease.threadId),
          UpdateExpression: "SET #rl = :t",
          ConditionExpression: "#tk = :tk",
          ExpressionAttributeNames: { "#tk": "tk", "#rl": "rl" },
          ExpressionAttributeValues: { ":tk": { N: String(lease.token) }, ":t": { BOOL: true } },
        }),
      );
    } catch (error) {
      // No longer current (or never claimed): nothing to give up.
      if (errorName(error) !== "ConditionalCheckFailedException") throw error;
    }
  }

  async getLease(threadId: string): Promise<LeaseState | undefined> {
    this.check();
    this.checkManyWorkers("getLease");
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    return this.readLease(threadId, "getLease");
  }

  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    this.check();
    this.checkManyWorkers("getThreadStatus");
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    const item = await this.readStatusItem(threadId, "getThreadStatus");
    return item ? readStatus(item) : undefined;
  }

  /**
   * Pages through the status index, one Query per state, merged. The index is eventually consistent,
   * so every entry is read back (BatchGetItem, strongly consistent) and kept only when the status item
   * still has that state and time: a thread that just changed may be missing from one listing.
   */
  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    this.check();
    this.checkManyWorkers("listThreads");
    const limit = query.limit;
    if (!Number.isInteger(limit) || limit < 1) throw new InvalidConfigError("limit", `${STORE}: listThreads needs a positive integer limit, got ${String(limit)}.`);
    if (query.olderThan !== undefined && !(query.olderThan > 0)) return [];
    const lists = await Promise.all((query.states ?? THREAD_STATES).map((state) => this.listState(state, query)));
    return lists
      .flat()
      .sort((a, b) => a.updatedAt - b.updatedAt || compareBytes(a.threadId, b.threadId))
      .slice(0, limit);
  }

  private async listState(state: ThreadState, query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    const after = query.after ? statusIndexKey(query.after.updatedAt, query.after.threadId) : undefined;
    const before = query.olderThan !== undefined && query.olderThan <= Number.MAX_SAFE_INTEGER ? timeKey(Math.ceil(query.olderThan)) : undefined;
    if (after !== undefined && before !== undefined && compareBytes(after, before) >= 0) return [];
    const values: Record<string, { S: string }> = { ":s": { S: state } };
    let condition = "#gs = :s";
    if (after !== undefined && before !== undefined) {
      // BETWEEN is inclusive: no key equals `before` (keys go on with "#"), the one equal to `after` is skipped below.
      condition += " AND #gu BETWEEN :lo AND :hi";
      values[":lo"] = { S: after };
      values[":hi"] = { S: before };
    } else if (after !== undefined) {
      condition += " AND #gu > :lo";
      values[":lo"] = { S: after };
    } else if (before !== undefined) {
      condition += " AND #gu < :hi";
      values[":hi"] = { S: before };
    }
    const out: ThreadStatusRecord[] = [];
    const pages = this.db.query("Query status index", "listThreads", {
      IndexName: STATUS_INDEX,
      KeyConditionExpression: condition,
      ExpressionAttributeNames: { "#gs": STATUS_INDEX_PK, ...(condition.includes("#gu") ? { "#gu": STATUS_INDEX_SK } : {}) },
      ExpressionAttributeValues: values,
      Limit: query.limit + 1,
    });
    for await (const page of pages) {
      const entries = page.filter((entry) => entry[STATUS_INDEX_SK]?.S !== after && entry[PK]?.S !== undefined);
      if (entries.length > 0) {
        const items = await this.db.batchGet("listThreads", entries.map((entry) => ({ pk: entry[PK]!.S!, sk: entry[SK]!.S! })), true);
        const byThread = new Map(items.map((item) => [item[PK]!.S!, item]));
        for (const entry of entries) {
          const item = byThread.get(entry[PK]!.S!);
          // The index lags the items: keep an entry only when its item still says so.
          if (!item || !this.live(item) || item["st"]?.S !== state || item[STATUS_INDEX_SK]?.S !== entry[STATUS_INDEX_SK]?.S) continue;
          out.push(readStatus(item));
        }
      }
      if (out.length >= query.limit) break;
    }
    return out;
  }

  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    this.check();
    this.checkManyWorkers("patchThreadStatus");
    checkIdentifier(request.threadId, ID_RULES.threadId, STORE);
    let result: ThreadStatusRecord | undefined;
    await this.commit("patchThreadStatus", request.threadId, request.fence, [], this.statusPatcher(request.threadId, request.patch, "patchThreadStatus", (record) => (result = record)));
    return result;
  }

  private checkManyWorkers(operation: string): void {
    if (!this.manyWorkers) {
      throw new InvalidConfigError("manyWorkers", `${STORE}: ${operation}() needs the manyWorkers option (leases and thread status, on an endpoint with TransactWriteItems).`);
    }
  }

  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    this.check();
    checkScope(scope);
    let item: Item | undefined;
    if (scope.checkpointId !== undefined) {
      checkIdentifier(scope.checkpointId, ID_RULES.checkpointId, STORE);
      const out = await this.db.send<GetItemCommandOutput>(
        "GetItem checkpoint",
        "getCheckpoint",
        new GetItemCommand({ TableName: this.tableName, Key: itemKey(scope.threadId, checkpointKey(scope.checkpointNs, scope.checkpointId)), ConsistentRead: this.consistent }),
      );
      item = out.Item && this.live(out.Item) ? (out.Item as Item) : undefined;
    } else {
      for await (const page of this.db.query("Query latest checkpoint", "getCheckpoint", {
        ...this.keyCondition(scope.threadId, "begins_with(#sk, :lo)", { ":lo": checkpointPrefix(scope.checkpointNs) }),
        ScanIndexForward: false,
        Limit: 1,
      })) {
        item = page.find((i) => this.live(i));
        if (item) break;
      }
    }
    if (!item) return undefined;
    this.ttl?.note(scope.threadId, item);
    const [stored] = await this.load(scope.threadId, await this.unspillAll(scope.threadId, [item], "getCheckpoint"), "getCheckpoint", false);
    return stored;
  }

  async *listCheckpoints(query: ListCheckpointsQuery): AsyncIterable<StoredCheckpoint> {
    this.check();
    if (query.threadId !== undefined) checkIdentifier(query.threadId, ID_RULES.threadId, STORE);
    if (query.checkpointNs !== undefined) checkIdentifier(query.checkpointNs, ID_RULES.checkpointNs, STORE);
    let remaining = query.limit;
    if (remaining !== undefined && remaining <= 0) return;
    const wanted = Object.entries(query.filter ?? {}).map(([k, v]) => [k, canonicalJsonText(v)] as const);
    const threads = query.threadId !== undefined ? [query.threadId] : this.threadIds();
    for await (const threadId of threads) {
      for await (const page of this.checkpointPages(threadId, query, remaining)) {
        let items = (await this.unspillAll(threadId, page.filter((i) => this.live(i)), "listCheckpoints")).filter((item) => {
          const { checkpointId } = parseCheckpointKey(item[SK]!.S!);
          if (query.checkpointId !== undefined && checkpointId !== query.checkpointId) return false;
          if (query.before !== undefined && compareBytes(checkpointId, query.before) >= 0) return false;
          if (wanted.length === 0) return true;
          const metadata = JSON.parse(item["mj"]?.S ?? "{}") as Record<string, unknown>;
          return wanted.every(([k, text]) => canonicalJsonText(Object.prototype.hasOwnProperty.call(metadata, k) ? metadata[k] : undefined) === text);
        });
        if (remaining !== undefined) items = items.slice(0, remaining);
        if (items.length === 0) continue;
        for (const stored of await this.load(threadId, items, "listCheckpoints", wanted.length === 0)) yield stored;
        if (remaining !== undefined) {
          remaining -= items.length;
          if (remaining <= 0) return;
        }
      }
    }
  }

  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    this.check();
    checkScope(query);
    checkIdentifier(query.checkpointId, ID_RULES.checkpointId, STORE);
    const { threadId, checkpointNs: ns } = query;
    const unseeded = new Set(query.channels);
    const fetched = new Map<string, CheckpointRecord>();
    const chain: Array<CheckpointRecord & { blobs: BlobRecord[] }> = [];
    const seeds: Array<{ at: number; channel: string; root: string; version: string }> = [];
    const visited = new Set<string>();
    let next: string | undefined;
    let started = false;
    // Newest first from the target, one page at a time, until every channel has its seed.
    // Only what the walk reads: parent, versions, delta roots (and a spilled item's reference).
    const projected = ["p", "cv", "dr", "x", "ns", ...(this.ttl ? [this.ttl.attribute] : [])];
    const names = Object.fromEntries(projected.map((name, i) => [`#a${i}`, name]));
    const pages = this.db.query("Query ancestors", "getHistory", {
      ...this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": checkpointPrefix(ns), ":hi": checkpointKey(ns, query.checkpointId) }, names),
      ProjectionExpression: ["#pk", "#sk", ...Object.keys(names)].join(", "),
      ScanIndexForward: false,
      // A first page of 100 (most seeds are near), then pages of 1 MB (thousands of ancestors each).
    }, 100);
    for await (const page of pages) {
      for (const item of await this.unspillAll(threadId, page.filter((i) => this.live(i)), "getHistory")) {
        const record = readCheckpoint(item);
        fetched.set(record.checkpointId, record);
      }
      if (!started) {
        const target = fetched.get(query.checkpointId);
        if (!target) return { ancestors: [] };
        started = true;
        next = target.parentCheckpointId;
      }
      const added: Array<CheckpointRecord & { blobs: BlobRecord[] }> = [];
      while (next !== undefined && fetched.has(next) && !visited.has(next)) {
        const ancestor = { ...fetched.get(next)!, blobs: [] };
        visited.add(next);
        added.push(ancestor);
        chain.push(ancestor);
        next = ancestor.parentCheckpointId;
      }
      const found = await this.ancestorBlobs(threadId, ns, added, [...unseeded]);
      for (const ancestor of added) {
        for (const channel of [...unseeded]) {
          const version = ancestor.channelVersions[channel];
          const blob = version === undefined ? undefined : found.get(`${channel}\u0000${version}`);
          if (!blob) continue;
          ancestor.blobs.push(blob);
          if (blob.value.type === "empty") continue;
          unseeded.delete(channel);
          const root = ancestor.deltaRoots?.[channel];
          if (root !== undefined) seeds.push({ at: chain.indexOf(ancestor), channel, root, version: version! });
        }
        if (unseeded.size === 0) {
          // The walk ends at the ancestor holding the last seed.
          chain.length = chain.indexOf(ancestor) + 1;
          break;
        }
      }
      if (unseeded.size === 0 || next === undefined || visited.has(next)) break;
    }
    if (chain.length === 0) return { ancestors: [] };
    const members = new Map(chain.map((a) => [a.checkpointId, a]));
    const ids = chain.map((a) => a.checkpointId).sort(compareBytes);
    const channels = [...new Set(query.channels)];
    const filter =
      channels.length <= 100
        ? // Commit items too: they say which writes of a batch are visible.
          { FilterExpression: `#ch IN (${channels.map((_, i) => `:c${i}`).join(", ")}) OR attribute_exists(#wc)`, channels: Object.fromEntries(channels.map((c, i) => [`:c${i}`, c])) }
        : undefined;
    const [writeItems, ranges] = await Promise.all([
      this.db.queryAll("Query ancestor writes", "getHistory", {
        ...this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": writesPrefix(ns, ids[0]!), ":hi": prefixEnd(writesPrefix(ns, ids[ids.length - 1]!)), ...filter?.channels }, filter ? { "#ch": "ch", "#wc": "wc" } : {}),
        ...(filter ? { FilterExpression: filter.FilterExpression } : {}),
      }),
      Promise.all(seeds.map((seed) => this.blobRange(threadId, ns, seed.channel, seed.root, seed.version, "getHistory"))),
    ]);
    const writes = new Map<string, WriteRecord[]>();
    for (const write of (await this.unspillAll(threadId, visibleWrites(writeItems), "getHistory")).map(readWrite)) {
      if (!members.has(write.checkpointId) || !channels.includes(write.channel)) continue;
      const { checkpointId, ...rest } = write;
      writes.set(checkpointId, [...(writes.get(checkpointId) ?? []), rest]);
    }
    seeds.forEach((seed, i) => {
      const ancestor = chain[seed.at]!;
      const have = new Set(ancestor.blobs.map((b) => `${b.channel}\u0000${b.version}`));
      ancestor.blobs.push(...ranges[i]!.filter((b) => !have.has(`${b.channel}\u0000${b.version}`)));
    });
    const ancestors: HistoryAncestor[] = chain.map((a) => ({
      checkpointId: a.checkpointId,
      parentCheckpointId: a.parentCheckpointId,
      channelVersions: a.channelVersions,
      ...(a.deltaRoots ? { deltaRoots: a.deltaRoots } : {}),
      blobs: a.blobs,
      writes: writes.get(a.checkpointId) ?? [],
    }));
    const values = ancestors.flatMap((a) => [...a.blobs.map((b) => b.value), ...a.writes.map((w) => w.value)]);
    return { ancestors, chunks: await this.fetchChunks(threadId, referenced(values), "getHistory") };
  }

  /**
   * The blobs of `channels` at the versions the ancestors reference, by `channel\0version`, nearest
   * first. Up to 100 keys: one batch get. More (a long walk without a seed): one Query per channel
   * over its version range reading only types, then the whole blob of each channel's nearest
   * non-empty version, so that the requests do not grow with the walk.
   */
  private async ancestorBlobs(threadId: string, ns: string, ancestors: CheckpointRecord[], channels: string[]): Promise<Map<string, BlobRecord>> {
    const versions = channels.map((channel) => ({ channel, versions: [...new Set(ancestors.flatMap((a) => (a.channelVersions[channel] === undefined ? [] : [a.channelVersions[channel]!])))] }));
    const byKey = (blobs: BlobRecord[]) => new Map(blobs.map((b) => [`${b.channel}\u0000${b.version}`, b]));
    if (versions.reduce((n, c) => n + c.versions.length, 0) <= 100) {
      return byKey(await this.getBlobItems(threadId, versions.flatMap((c) => c.versions.map((v) => key(threadId, blobKey(ns, c.channel, v)))), "getHistory"));
    }
    const seeds = await Promise.all(
      versions.map(async ({ channel, versions: list }) => {
        if (list.length === 0) return [];
        const sorted = [...list].sort(compareBytes);
        const types = await this.db.queryAll("Query blob types", "getHistory", {
          ...this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": blobKey(ns, channel, sorted[0]!), ":hi": blobKey(ns, channel, sorted[sorted.length - 1]!) }, { "#t": "vt", "#x": "x" }),
          ProjectionExpression: "#sk, #t, #x",
        });
        // A spilled blob keeps its type in the spill; an empty one is never spilled.
        const filled = new Set(types.filter((i) => i["x"] !== undefined || (i["vt"]?.S ?? "empty") !== "empty").map((i) => i[SK]!.S!));
        // Nearest first: the first ancestor whose version of the channel holds a value is its seed.
        const seed = ancestors.map((a) => a.channelVersions[channel]).find((v) => v !== undefined && filled.has(blobKey(ns, channel, v)));
        return seed === undefined ? [] : [key(threadId, blobKey(ns, channel, seed))];
      }),
    );
    return byKey(await this.getBlobItems(threadId, seeds.flat(), "getHistory"));
  }

  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    this.check();
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    for (const hash of hashes) checkIdentifier(hash, HASH_RULE, STORE);
    return this.fetchChunks(threadId, new Map(hashes.map((h) => [h, undefined])), "getChunks");
  }

  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    this.check();
    checkScope(scope);
    for (const k of keys) checkBlobKey(k.channel, k.version);
    return this.getBlobItems(scope.threadId, keys.map((k) => key(scope.threadId, blobKey(scope.checkpointNs, k.channel, k.version))), "getBlobs");
  }

  /**
   * Deletes every item of the thread's partition: checkpoints first, so that no reader meets a
   * checkpoint whose parts are going, then everything else, parts a crash left behind included.
   */
  async deleteThread(threadId: string): Promise<void> {
    this.check();
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    const remove = async (condition: string | undefined, values: Record<string, string>) => {
      const items = await this.db.queryAll("Query thread keys", "deleteThread", { ...this.keyCondition(threadId, condition, values, { "#sk": SK }), ProjectionExpression: "#pk, #sk" });
      // The lease item stays (manyWorkers): its token must keep growing for a new thread of this id.
      const doomed = items.filter((item) => item[SK]!.S! !== LEASE_KEY);
      await this.db.batchWrite("deleteThread", doomed.map((item) => ({ DeleteRequest: { Key: itemKey(item[PK]!.S!, item[SK]!.S!) } })));
    };
    await remove("begins_with(#sk, :lo)", { ":lo": "c|" });
    await remove(undefined, {});
    this.ttl?.forget(threadId);
  }

  /**
   * Every record of the thread, for retention: one strongly consistent Query over its partition, in
   * pages of 1 MB, reading whole items (core reports the bytes each record holds). A spilled item is
   * read from the chunks the same Query brings, or from one BatchGetItem when it came after them.
   * The lease and status items are not records; expired items (TTL) are not listed. See retention.ts.
   */
  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    this.check();
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    const listing = new ThreadListing();
    for await (const page of this.db.query("Query thread", "listThreadRecords", this.keyCondition(threadId, undefined, {}))) {
      for (const item of page) if (this.live(item)) listing.add(item);
    }
    const missing = listing.missingSpills();
    return listing.finish(missing.size > 0 ? await this.fetchChunks(threadId, missing, "listThreadRecords") : []);
  }

  /**
   * Removes what the request lists, with what goes with it (see retention.ts): one Query of the
   * partition's keys finds the write and commit items under the request's checkpoint ids, the chunk
   * items of its hashes and the spill chunks of removed items; then checkpoint items, commit items,
   * write items, blobs and chunks are removed in that order, each group (BatchWriteItem, 25 a request)
   * once the one before is gone, so that a crash leaves only records nothing reads. The lease item is
   * never among them.
   *
   * With `manyWorkers`, a fence makes every group TransactWriteItems of a ConditionCheck on the lease
   * item and 24 removals, one after the other: a worker that lost the thread removes nothing more
   * ({@link LeaseLostError}). A status change goes into the first of them, with the newest checkpoints
   * removed: a crash after it leaves a status naming a kept checkpoint (a new run of the removal then
   * leaves it so), where one written last would be left naming a checkpoint already gone.
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    this.check();
    const { threadId, fence, status } = request;
    checkIdentifier(threadId, ID_RULES.threadId, STORE);
    for (const c of request.checkpoints) {
      checkRemovalNs(c.checkpointNs);
      checkIdentifier(c.checkpointId, ID_RULES.checkpointId, STORE);
    }
    for (const b of request.blobs) {
      checkRemovalNs(b.checkpointNs);
      checkBlobKey(b.channel, b.version);
    }
    for (const hash of request.chunks) checkIdentifier(hash, HASH_RULE, STORE);
    if (fence !== undefined || status !== undefined) this.checkManyWorkers("deleteRecords (with a fence or a status)");
    if (status) checkIdentifier(status.checkpointId, ID_RULES.checkpointId, STORE);
    const anything = request.checkpoints.length + request.blobs.length + request.chunks.length > 0;
    const inventory = anything
      ? await this.db.queryAll("Query thread keys", "deleteRecords", { ...this.keyCondition(threadId, undefined, {}, { "#sk": SK, "#x": "x" }), ProjectionExpression: "#pk, #sk, #x" })
      : [];
    const removal = removalOf(request, inventory);
    const groups = [removal.checkpoints, removal.commits, removal.writes, removal.blobs, removal.chunks].filter((keys) => keys.length > 0);
    if (fence === undefined && status === undefined) {
      for (const keys of groups) await this.db.batchWrite("deleteRecords", keys.map((sk) => ({ DeleteRequest: { Key: itemKey(threadId, sk) } })));
      return;
    }
    const deletions = (keys: string[]): TransactWriteItem[] => keys.map((sk) => ({ Delete: { TableName: this.tableName, Key: itemKey(threadId, sk) } }));
    let statusAction = status === undefined ? undefined : await this.statusReplacement(threadId, status);
    const room = REMOVAL_TRANSACTION_ACTIONS - (fence ? 1 : 0);
    for (const keys of groups) {
      let rest = keys;
      if (statusAction) {
        const first = rest.slice(0, room - 1);
        await this.commit("deleteRecords", threadId, fence, [...deletions(first), statusAction]);
        statusAction = undefined;
        rest = rest.slice(first.length);
      }
      if (fence === undefined) {
        await this.db.batchWrite("deleteRecords", rest.map((sk) => ({ DeleteRequest: { Key: itemKey(threadId, sk) } })));
        continue;
      }
      // One at a time: concurrent transactions on one lease item would cancel each other (TransactionConflict).
      for (let i = 0; i < rest.length; i += room) await this.commit("deleteRecords", threadId, fence, deletions(rest.slice(i, i + room)));
    }
    if (statusAction) await this.commit("deleteRecords", threadId, fence, [statusAction]);
  }

  /** The action that gives the thread the status a removal carries: a Put whatever the item names, or a Delete for `null`. */
  private async statusReplacement(threadId: string, status: NonNullable<DeleteRecordsRequest["status"]> | null): Promise<TransactWriteItem> {
    if (status === null) return { Delete: { TableName: this.tableName, Key: statusKey(threadId) } };
    const record = recordOfWrite(threadId, status.checkpointId, status.write, undefined)!;
    return { Put: { TableName: this.tableName, Item: this.statusItemOf(record, await this.stamp(threadId, "deleteRecords", false)) } };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsClient) this.client.destroy?.();
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError(STORE);
  }

  private live(item: Item): boolean {
    return this.ttl ? this.ttl.live(item) : true;
  }

  private stamp(threadId: string, operation: string, checkpoint: boolean): Promise<Item> {
    return this.ttl ? this.ttl.stamp(threadId, operation, checkpoint) : Promise.resolve({});
  }

  private fit(item: Item, extra: Item, spill: Item[], what: () => string): Item {
    return fitItem(item, this.itemLimit, this.chunkBytes, extra, spill, what);
  }

  private chunkItems(threadId: string, chunks: ChunkRecord[], extra: Item): Item[] {
    for (const chunk of chunks) checkIdentifier(chunk.hash, HASH_RULE, STORE);
    return chunkItems(threadId, chunks, extra).map((item) => this.fit(item, extra, [], () => `chunk ${item[SK]!.S!}`));
  }

  /** A Query's key condition on one thread's partition, and on its sort key when `sortCondition` is given. */
  private keyCondition(threadId: string, sortCondition: string | undefined, values: Record<string, string>, names: Record<string, string> = {}): Omit<QueryCommandInput, "TableName"> {
    return {
      KeyConditionExpression: sortCondition === undefined ? "#pk = :pk" : `#pk = :pk AND ${sortCondition}`,
      // DynamoDB refuses a name that the expressions do not use.
      ExpressionAttributeNames: { "#pk": PK, ...(sortCondition === undefined ? {} : { "#sk": SK }), ...names },
      ExpressionAttributeValues: Object.fromEntries(Object.entries({ ":pk": threadId, ...values }).map(([k, v]) => [k, { S: v }])),
      ConsistentRead: this.consistent,
    };
  }

  /** The thread ids of the table that have checkpoints, in scan order: `list()` without a thread. */
  private async *threadIds(): AsyncGenerator<string> {
    const seen = new Set<string>();
    let start: Item | undefined;
    do {
      const out = await this.db.send<ScanCommandOutput>(
        "Scan threads",
        "listCheckpoints",
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: "begins_with(#sk, :c)",
          ProjectionExpression: "#pk",
          ExpressionAttributeNames: { "#pk": PK, "#sk": SK },
          ExpressionAttributeValues: { ":c": { S: "c|" } },
          ConsistentRead: this.consistent,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of out.Items ?? []) {
        const threadId = item[PK]?.S;
        if (threadId === undefined || seen.has(threadId)) continue;
        seen.add(threadId);
        yield threadId;
      }
      start = out.LastEvaluatedKey as Item | undefined;
    } while (start);
  }

  /** Checkpoint items of one thread matching the query's namespace and `before`, newest first. */
  private checkpointPages(threadId: string, query: ListCheckpointsQuery, remaining: number | undefined): AsyncGenerator<Item[]> {
    const ns = query.checkpointNs;
    const limit = Math.min(this.pageSize, query.filter === undefined && remaining !== undefined ? remaining + 1 : Number.POSITIVE_INFINITY);
    const prefix = ns === undefined ? "c|" : checkpointPrefix(ns);
    const condition =
      ns !== undefined && query.checkpointId !== undefined
        ? this.keyCondition(threadId, "#sk = :lo", { ":lo": checkpointKey(ns, query.checkpointId) })
        : ns !== undefined && query.before !== undefined
          ? this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": prefix, ":hi": `${prefix}${query.before}` })
          : this.keyCondition(threadId, "begins_with(#sk, :lo)", { ":lo": prefix });
    return this.db.query("Query checkpoints", "listCheckpoints", { ...condition, ScanIndexForward: false, Limit: limit });
  }

  /** The blobs, writes and chunks of checkpoint items (unspilled) of one thread, as stored checkpoints. */
  private async load(threadId: string, items: Item[], operation: string, contiguous: boolean): Promise<StoredCheckpoint[]> {
    const records = items.map(readCheckpoint);
    const exact: Key[] = [];
    const ranges = new Map<string, { ns: string; channel: string; root: string; version: string }>();
    for (const r of records) {
      for (const [channel, version] of Object.entries(r.channelVersions)) {
        const root = r.deltaRoots?.[channel];
        if (root === undefined) exact.push(key(threadId, blobKey(r.checkpointNs, channel, version)));
        else ranges.set([r.checkpointNs, channel, root, version].join("\u0000"), { ns: r.checkpointNs, channel, root, version });
      }
    }
    const rangeList = [...ranges.values()];
    const [found, inRanges, writeItems] = await Promise.all([
      this.getBlobItems(threadId, exact, operation, true),
      Promise.all(rangeList.map((r) => this.blobRange(threadId, r.ns, r.channel, r.root, r.version, operation))),
      this.writeItems(threadId, records, operation, contiguous),
    ]);
    const bySortKey = new Map(found.map(({ sk, blob }) => [sk, blob]));
    const byRange = new Map(rangeList.map((r, i) => [[r.ns, r.channel, r.root, r.version].join("\u0000"), inRanges[i]!]));
    const writes = new Map<string, WriteRecord[]>();
    for (const { ns, write } of writeItems) {
      const { checkpointId, ...rest } = write;
      const k = `${ns}\u0000${checkpointId}`;
      writes.set(k, [...(writes.get(k) ?? []), rest]);
    }
    const stored = records.map((record): StoredCheckpoint => {
      const own: BlobRecord[] = [];
      for (const [channel, version] of Object.entries(record.channelVersions)) {
        const root = record.deltaRoots?.[channel];
        if (root === undefined) {
          const blob = bySortKey.get(blobKey(record.checkpointNs, channel, version));
          if (blob) own.push(blob);
        } else {
          own.push(...(byRange.get([record.checkpointNs, channel, root, version].join("\u0000")) ?? []));
        }
      }
      return { record, blobs: own, writes: writes.get(`${record.checkpointNs}\u0000${record.checkpointId}`) ?? [] };
    });
    const values = stored.flatMap((s) => [s.record.checkpoint, s.record.metadata, ...s.blobs.map((b) => b.value), ...s.writes.map((w) => w.value)]);
    const chunks = await this.fetchChunks(threadId, referenced(values), operation);
    const byHash = new Map<string, ChunkRecord[]>();
    for (const chunk of chunks) byHash.set(chunk.hash, [...(byHash.get(chunk.hash) ?? []), chunk]);
    for (const s of stored) {
      const own = [...referenced([s.record.checkpoint, s.record.metadata, ...s.blobs.map((b) => b.value), ...s.writes.map((w) => w.value)]).keys()];
      s.chunks = own.flatMap((hash) => byHash.get(hash) ?? []);
    }
    return stored;
  }

  /**
   * The writes of the records' checkpoints: one Query over the range of a namespace's checkpoint ids
   * when the records are a contiguous page of it, else one Query per checkpoint (in parallel).
   */
  private async writeItems(threadId: string, records: CheckpointRecord[], operation: string, contiguous: boolean): Promise<Array<{ ns: string; write: WriteRecord & { checkpointId: string } }>> {
    const byNs = new Map<string, Set<string>>();
    for (const r of records) byNs.set(r.checkpointNs, (byNs.get(r.checkpointNs) ?? new Set()).add(r.checkpointId));
    const queries: Array<{ ns: string; ids: Set<string>; lo: string; hi: string }> = [];
    for (const [ns, ids] of byNs) {
      const sorted = [...ids].sort(compareBytes);
      if (contiguous || sorted.length === 1) queries.push({ ns, ids, lo: writesPrefix(ns, sorted[0]!), hi: prefixEnd(writesPrefix(ns, sorted[sorted.length - 1]!)) });
      else for (const id of sorted) queries.push({ ns, ids, lo: writesPrefix(ns, id), hi: prefixEnd(writesPrefix(ns, id)) });
    }
    const pages = await mapLimit(queries, this.db.concurrency, async (q) => {
      const items = await this.db.queryAll("Query writes", operation, this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": q.lo, ":hi": q.hi }));
      return (await this.unspillAll(threadId, visibleWrites(items), operation)).map((item) => ({ ns: q.ns, write: readWrite(item) })).filter((w) => q.ids.has(w.write.checkpointId));
    });
    return pages.flat();
  }

  private getBlobItems(threadId: string, keys: Key[], operation: string): Promise<BlobRecord[]>;
  private getBlobItems(threadId: string, keys: Key[], operation: string, withKeys: true): Promise<Array<{ sk: string; blob: BlobRecord }>>;
  private async getBlobItems(threadId: string, keys: Key[], operation: string, withKeys?: true): Promise<BlobRecord[] | Array<{ sk: string; blob: BlobRecord }>> {
    if (keys.length === 0) return [];
    const items = await this.unspillAll(threadId, await this.db.batchGet(operation, keys, this.consistent), operation);
    return withKeys ? items.map((item) => ({ sk: item[SK]!.S!, blob: readBlob(item) })) : items.map(readBlob);
  }

  /** Every blob of a channel with a version in `[root, version]`. */
  private async blobRange(threadId: string, ns: string, channel: string, root: string, version: string, operation: string): Promise<BlobRecord[]> {
    const items = await this.db.queryAll(
      "Query blob range",
      operation,
      this.keyCondition(threadId, "#sk BETWEEN :lo AND :hi", { ":lo": blobKey(ns, channel, root), ":hi": blobKey(ns, channel, version) }),
    );
    return (await this.unspillAll(threadId, items, operation)).map(readBlob);
  }

  /** Restores spilled items (one batch get for all of them). */
  private async unspillAll(threadId: string, items: Item[], operation: string): Promise<Item[]> {
    const refs = new Map<string, number>();
    for (const item of items) {
      const ref = spillRef(item);
      if (ref) refs.set(ref.hash, ref.count);
    }
    if (refs.size === 0) return items;
    const chunks = await this.fetchChunks(threadId, refs, operation);
    return items.map((item) => unspill(item, chunks));
  }

  /**
   * Every chunk of each hash: all indices when the count is known (a chunk reference), else index 0,
   * whose `n` says whether more follow (a second batch get).
   */
  private async fetchChunks(threadId: string, hashes: Map<string, number | undefined>, operation: string): Promise<ChunkRecord[]> {
    if (hashes.size === 0) return [];
    const keysOf = (hash: string, from: number, to: number) => Array.from({ length: to - from }, (_, i) => key(threadId, chunkKey(hash, from + i)));
    const first = [...hashes].flatMap(([hash, count]) => keysOf(hash, 0, count ?? 1));
    const chunks = (await this.db.batchGet(operation, first, this.consistent)).map(readChunk);
    const more = chunks.filter((c) => c.index === 0 && hashes.get(c.hash) === undefined && (c.count ?? 1) > 1);
    if (more.length > 0) chunks.push(...(await this.db.batchGet(operation, more.flatMap((c) => keysOf(c.hash, 1, c.count!)), this.consistent)).map(readChunk));
    return chunks.map(({ hash, index, data }) => ({ hash, index, data }));
  }
}

const key = (pk: string, sk: string): Key => ({ pk, sk });
const itemKey = (pk: string, sk: string): Item => ({ [PK]: { S: pk }, [SK]: { S: sk } });

/** Hashes values reference: piece references (count unknown) and chunk references (count known). */
function referenced(values: Value[]): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  for (const value of values) {
    for (const hash of value.refs ?? []) if (!out.has(hash)) out.set(hash, undefined);
    if (value.chunkRef) out.set(value.chunkRef.hash, value.chunkRef.count);
  }
  return out;
}

/** Distinct keys only: a batch refuses two requests for one item. */
function uniqueItems(items: Item[]): Item[] {
  return [...new Map(items.map((item) => [item[SK]!.S!, item])).values()];
}

/** Code-point order (DynamoDB's order of sort keys: their UTF-8 bytes). */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

function checkScope(scope: ThreadScope): void {
  checkIdentifier(scope.threadId, ID_RULES.threadId, STORE);
  checkIdentifier(scope.checkpointNs, ID_RULES.checkpointNs, STORE);
}

function checkRecord(record: CheckpointRecord): void {
  checkScope(record);
  checkIdentifier(record.checkpointId, ID_RULES.checkpointId, STORE);
  if (record.parentCheckpointId !== undefined) checkIdentifier(record.parentCheckpointId, ID_RULES.checkpointId, STORE);
  for (const [channel, version] of Object.entries(record.channelVersions)) checkBlobKey(channel, version);
}

/** A namespace of a removal: a real one, or the name a listing gives a hashed namespace it cannot name. */
function checkRemovalNs(ns: string): void {
  if (typeof ns === "string" && isUnnamedNs(ns)) return;
  checkIdentifier(ns, ID_RULES.checkpointNs, STORE);
}

function checkBlobKey(channel: string, version: string): void {
  checkIdentifier(channel, ID_RULES.channel, STORE);
  checkIdentifier(version, ID_RULES.version, STORE);
}

function checkLeaseArgs(workerId: string, ttlMs: number): void {
  if (typeof workerId !== "string" || workerId === "") throw new InvalidConfigError("workerId", `${STORE}: a lease needs a non-empty workerId, got ${JSON.stringify(workerId)}.`);
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) throw new InvalidConfigError("ttlMs", `${STORE}: a lease's ttlMs must be a positive integer, got ${String(ttlMs)}.`);
}

function checkWrite(write: WriteRecord): void {
  checkIdentifier(write.taskId, ID_RULES.taskId, STORE);
  checkIdentifier(write.channel, ID_RULES.channel, STORE);
  checkIdentifier(write.taskPath, ID_RULES.taskPath, STORE);
  if (!Number.isSafeInteger(write.idx)) throw new InvalidConfigError("idx", `${STORE}: a write's idx must be an integer, got ${String(write.idx)}.`);
}
