/**
 * `SqliteStore`: the {@link CheckpointStore} contract on better-sqlite3.
 *
 * @module
 */
import {
  ID_RULES,
  InvalidConfigError,
  LeaseLostError,
  threadTtlSettings,
  THREAD_STATES,
  StoreBusyError,
  StoreClosedError,
  StoreReadOnlyError,
  checkIdentifier,
  type IdentifierRule,
  StoreNotSetUpError,
  type Lease,
  type LeaseClaim,
  type LeaseFence,
  type LeaseState,
  type ListThreadsQuery,
  type PatchThreadStatusRequest,
  type ThreadState,
  type ThreadStatusPatch,
  type ThreadStatusRecord,
  type BlobRecord,
  type CheckpointRecord,
  type CheckpointStore,
  type ChunkRecord,
  type ChunkRef,
  type DeleteRecordsRequest,
  type ThreadRecords,
  type ThreadStatusWrite,
  type HistoryAncestor,
  type HistoryQuery,
  type HistoryResult,
  type ListCheckpointsQuery,
  type PutCheckpointRequest,
  type PutWritesRequest,
  type SerializedValue,
  type StoreCapabilities,
  type StoreCommandListener,
  type StoredCheckpoint,
  type ThreadScope,
  type WriteRecord,
} from "@resumable/core";

import { loadDriver, type SqliteDatabase, type SqliteStatement } from "./database.js";
import { metadataFilterSql } from "./metadata-filter.js";
import { CREATE_MIGRATIONS_TABLE, MIGRATIONS, MIGRATIONS_TABLE, SCHEMA_VERSION } from "./schema.js";

/** How hard SQLite syncs to disk; see {@link SqliteStoreOptions.synchronous}. */
export type SqliteSynchronous = "NORMAL" | "FULL";

/** Options of {@link SqliteStore}. */
export interface SqliteStoreOptions {
  /**
   * SQLite's `synchronous` setting, applied to the connection (the database runs in WAL mode).
   *
   * - `"FULL"` (default): every commit is fsynced to the WAL before `put`/`putWrites` resolves. A
   *   committed checkpoint or write survives a process crash **and** a power loss or OS crash.
   * - `"NORMAL"`: the WAL is fsynced only at WAL checkpoints. A committed transaction survives a
   *   process crash (it is in the WAL, which the OS holds), but a power loss or OS crash may roll back
   *   the last transactions. The database is never corrupted either way; it may only be older.
   */
  synchronous?: SqliteSynchronous;
  /**
   * How long a write waits for another connection's write lock before failing with "database is
   * locked", in milliseconds. Default 5000. Writes take the lock up front (`BEGIN IMMEDIATE`), so
   * concurrent writers queue on this timeout instead of failing.
   */
  busyTimeoutMs?: number;
  /** Checkpoints fetched per query while `listCheckpoints` pages through a thread. Default 100. */
  pageSize?: number;
  /**
   * Expire a thread this many seconds after its last write (`putCheckpoint`, `putWrites`), as a whole:
   * its expiry is one row, moved forward in each write's own transaction, and reads treat an expired
   * thread as gone from that moment on (every namespace, its status included). Its rows are deleted
   * by {@link SqliteStore.deleteExpiredThreads}, a thread per transaction. A write to an expired
   * thread deletes it first, so the new run starts from nothing. Default: never. Every process that
   * shares the file should pass the same value.
   */
  ttlSeconds?: number;
  /**
   * With `ttlSeconds`: `getCheckpoint` and `listCheckpoints` move the expiry of each live thread they
   * return forward too (one `UPDATE` after the read, under the write lock), so threads that are only
   * read stay. Default `false`: only writes do.
   */
  refreshOnRead?: boolean;
}

/** SQLite's default `SQLITE_MAX_LENGTH`: the largest string or blob one value can hold. */
const SQLITE_MAX_LENGTH = 1_000_000_000;

const MAX_CACHED_STATEMENTS = 200;

/**
 * How long one statement may wait inside SQLite for another connection's lock. Longer waits happen
 * between attempts, asynchronously, so the event loop keeps running (see `retryWhileBusy`).
 */
const IN_CALL_BUSY_MS = 5;
/**
 * Largest part of a chunk row. A piece (a message) of a few KB in one row fills half a 4 KB page and
 * leaves the rest empty (a 200-turn chat of 2 KB messages took 2.96x its raw bytes on disk so). A chunk
 * is split into equal parts of at most this size: a 2.1 KB message makes three parts of 700 bytes, five
 * to a page; fixed 1200-byte parts (earlier releases) made a 1200 and a 900, three to a page, a fifth
 * of every page empty (2.06x raw on disk at 1000 turns, 1.95x now). Larger pages would pack them too,
 * but every commit writes whole pages to the WAL: 16 KB pages made a put's COMMIT cost four times as much.
 */
const PART_BYTES = 700;
/** The longest pause between two attempts to take a lock. */
const MAX_BUSY_PAUSE_MS = 50;

/** Guards the recursive history query against a corrupt parent chain that loops. */
const MAX_HISTORY_DEPTH = 1_000_000;

/**
 * A condition true unless the thread (the SQL expression `thread`) expired: with `ttlSeconds`, added
 * to every read, so an expired thread is gone as a whole before any sweep ran. `@now` is bound to the
 * caller's clock. A thread without an expiry row (written before the TTL was turned on) is live.
 */
function live(thread: string): string {
  return `NOT EXISTS (SELECT 1 FROM resumable_thread_expiry AS x WHERE x.thread_id = ${thread} AND x.expires_at <= @now)`;
}

const STATUS_COLUMNS = "thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at";

const CHECKPOINT_COLUMNS = `c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type,
  c.checkpoint, c.checkpoint_chunk_ref, c.metadata_type, c.metadata, c.metadata_chunk_ref, c.metadata_json, c.channel_versions,
  c.delta_roots`;

/**
 * One checkpoint (the newest of the namespace, or by id) with its record (`kind` 'c'), the blob of
 * each channel version, or of each delta range (`b`), and its pending writes (`w`), in one statement.
 * Columns are positional across kinds; see readOneCheckpoint.
 */
function oneCheckpoint(byId: boolean, ttl = false): string {
  return `WITH cp AS (SELECT * FROM resumable_checkpoints WHERE thread_id = @thread AND checkpoint_ns = @ns${ttl ? ` AND ${live("@thread")}` : ""}
      ${byId ? "AND checkpoint_id = @id" : "ORDER BY checkpoint_id DESC LIMIT 1"}),
    bl AS (SELECT b.channel, b.version, b.type, b.data, b.chunk_ref, b.base_version, b.refs
      FROM cp CROSS JOIN json_each(cp.channel_versions) AS v
      LEFT JOIN json_each(cp.delta_roots) AS r ON r.key = v.key
      CROSS JOIN resumable_blobs AS b ON b.thread_id = cp.thread_id AND b.checkpoint_ns = cp.checkpoint_ns
        AND b.channel = v.key AND b.version BETWEEN coalesce(r.value, v.value) AND v.value),
    wr AS (SELECT w.task_id, w.idx, w.channel, w.type, w.data, w.chunk_ref, w.task_path, w.refs
      FROM cp CROSS JOIN resumable_writes AS w ON w.thread_id = cp.thread_id AND w.checkpoint_ns = cp.checkpoint_ns
        AND w.checkpoint_id = cp.checkpoint_id)
    SELECT 'c' AS kind, checkpoint_id AS a, parent_checkpoint_id AS b, checkpoint_type AS type, checkpoint AS data,
      checkpoint_chunk_ref AS chunk_ref, metadata_type AS e, metadata AS f, metadata_chunk_ref AS g, metadata_json AS h,
      channel_versions AS i, delta_roots AS j FROM cp
    UNION ALL SELECT 'b', channel, version, type, data, chunk_ref, base_version, refs, NULL, NULL, NULL, NULL FROM bl
    UNION ALL SELECT 'w', task_id, idx, type, data, chunk_ref, channel, refs, task_path, NULL, NULL, NULL FROM wr`;
}

/**
 * A row of {@link oneCheckpoint}, as an array in the order of its columns
 * `kind, a, b, type, data, chunk_ref, e, f, g, h, i, j` (read with better-sqlite3's `raw` mode:
 * building an object per row took a fifth of the statement's time).
 */
type OneRow = [
  kind: "c" | "b" | "w",
  a: string,
  b: string | number | null,
  type: string | null,
  data: Uint8Array | null,
  chunkRef: string | null,
  e: string | null,
  f: Uint8Array | string | null,
  g: string | null,
  h: string | null,
  i: string | null,
  j: string | null,
];

const SQL = {
  schemaVersion: `SELECT max(version) AS version FROM ${MIGRATIONS_TABLE}`,
  recordMigration: `INSERT INTO ${MIGRATIONS_TABLE} (version, applied_at) VALUES (?, ?)`,
  insertChunk: `INSERT OR IGNORE INTO resumable_chunks (thread_id, hash, idx, part, data) VALUES (?, ?, ?, ?, ?)`,
  insertBlob: `INSERT OR IGNORE INTO resumable_blobs (thread_id, checkpoint_ns, channel, version, type, data, chunk_ref, base_version, refs)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  upsertCheckpoint: `INSERT OR REPLACE INTO resumable_checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
    checkpoint_type, checkpoint, checkpoint_chunk_ref, metadata_type, metadata, metadata_chunk_ref, metadata_json, channel_versions,
    delta_roots) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  upsertWrite: `INSERT OR REPLACE INTO resumable_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data,
    chunk_ref, task_path, refs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertWrite: `INSERT OR IGNORE INTO resumable_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data,
    chunk_ref, task_path, refs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  checkpointById: `SELECT ${CHECKPOINT_COLUMNS} FROM resumable_checkpoints c
    WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id = ?`,
  oneCheckpointLatest: oneCheckpoint(false),
  oneCheckpointById: oneCheckpoint(true),
  oneCheckpointLatestTtl: oneCheckpoint(false, true),
  oneCheckpointByIdTtl: oneCheckpoint(true, true),
  latestCheckpoint: `SELECT ${CHECKPOINT_COLUMNS} FROM resumable_checkpoints c
    WHERE c.thread_id = ? AND c.checkpoint_ns = ? ORDER BY c.checkpoint_id DESC LIMIT 1`,
  // Blobs and writes for a set of checkpoints, keyed through JSON arrays so that one statement serves
  // one checkpoint or a page of them: `@scopes` = [[thread, ns], ...] (a long thread id is sent once),
  // keys name a scope by index and a range of versions of one channel (a single version, or a delta
  // chain's range from its root). CROSS JOIN makes SQLite drive the lookups from the keys, through the
  // primary key, rather than scan a table.
  blobsByKeys: `WITH keys AS (SELECT k.value ->> 0 AS i, (@scopes -> (k.value ->> 0)) ->> 0 AS thread_id,
      (@scopes -> (k.value ->> 0)) ->> 1 AS checkpoint_ns, k.value ->> 1 AS channel, k.value ->> 2 AS low, k.value ->> 3 AS high
      FROM json_each(@keys) AS k)
    SELECT keys.i AS scope, b.channel, b.version, b.type, b.data, b.chunk_ref, b.base_version, b.refs
    FROM keys CROSS JOIN resumable_blobs AS b ON b.thread_id = keys.thread_id AND b.checkpoint_ns = keys.checkpoint_ns
      AND b.channel = keys.channel AND b.version BETWEEN keys.low AND keys.high`,
  writesByCheckpoints: `WITH keys AS (SELECT k.value ->> 0 AS i, (@scopes -> (k.value ->> 0)) ->> 0 AS thread_id,
      (@scopes -> (k.value ->> 0)) ->> 1 AS checkpoint_ns, k.value ->> 1 AS checkpoint_id FROM json_each(@keys) AS k)
    SELECT keys.i AS scope, w.checkpoint_id, w.task_id, w.idx, w.channel, w.type, w.data, w.chunk_ref, w.task_path, w.refs
    FROM keys CROSS JOIN resumable_writes AS w ON w.thread_id = keys.thread_id AND w.checkpoint_ns = keys.checkpoint_ns
      AND w.checkpoint_id = keys.checkpoint_id`,
  // Chunks and shared pieces by [thread, hash] pairs, every index of each. No ORDER BY (a sort of every
  // row, data included, cost a tenth of the statement): see joinParts.
  chunksByKeys: `SELECT c.hash, c.idx, c.part, c.data, k.value ->> 0 AS thread_id FROM json_each(@keys) AS k
    CROSS JOIN resumable_chunks AS c ON c.thread_id = k.value ->> 0 AND c.hash = k.value ->> 1`,
  historyWrites: `WITH keys AS (SELECT k.value AS checkpoint_id FROM json_each(@ids) AS k)
    SELECT 0 AS scope, w.checkpoint_id, w.task_id, w.idx, w.channel, w.type, w.data, w.chunk_ref, w.task_path, w.refs
    FROM keys CROSS JOIN resumable_writes AS w ON w.thread_id = @thread AND w.checkpoint_ns = @ns AND w.checkpoint_id = keys.checkpoint_id
    WHERE w.channel IN (SELECT value FROM json_each(@channels))`,
  // See historySql.
  history: historySql(false),
  historyTtl: historySql(true),
  chunks: chunksSql(false),
  chunksTtl: chunksSql(true),
  deleteCheckpoints: `DELETE FROM resumable_checkpoints WHERE thread_id = ?`,
  deleteBlobs: `DELETE FROM resumable_blobs WHERE thread_id = ?`,
  deleteWrites: `DELETE FROM resumable_writes WHERE thread_id = ?`,
  deleteChunks: `DELETE FROM resumable_chunks WHERE thread_id = ?`,
  deleteStatus: `DELETE FROM resumable_threads WHERE thread_id = ?`,
  lease: `SELECT token, worker_id, expires_at, released FROM resumable_leases WHERE thread_id = ?`,
  // A free lease (never claimed, released, expired) or the same worker's: the token goes up by one.
  claimLease: `INSERT INTO resumable_leases (thread_id, token, worker_id, expires_at, released) VALUES (@thread, 1, @worker, @expires, 0)
    ON CONFLICT (thread_id) DO UPDATE SET token = token + 1, worker_id = excluded.worker_id, expires_at = excluded.expires_at, released = 0
    WHERE released = 1 OR expires_at <= @now OR worker_id = excluded.worker_id
    RETURNING token, worker_id, expires_at`,
  renewLease: `UPDATE resumable_leases SET expires_at = @expires WHERE thread_id = @thread AND token = @token AND released = 0
    RETURNING token, worker_id, expires_at`,
  releaseLease: `UPDATE resumable_leases SET released = 1 WHERE thread_id = ? AND token = ?`,
  // A root checkpoint's status replaces the record, unless the record names a later checkpoint.
  putStatus: `INSERT INTO resumable_threads (thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at)
    VALUES (?, ?, ?, ?, ?, ?, 0, NULL)
    ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state, checkpoint_id = excluded.checkpoint_id, updated_at = excluded.updated_at,
      error = excluded.error, interrupts = excluded.interrupts, attempts = 0, attempted_at = NULL
    WHERE excluded.checkpoint_id >= resumable_threads.checkpoint_id`,
  // The same replacement, when the record keeps its state and its updated_at is recent enough (see
  // ThreadStatusWrite.keepUpdatedAtFrom): no column of resumable_threads_state changes, so SQLite
  // rewrites the row and leaves the index alone (one page fewer per commit).
  touchStatus: `UPDATE resumable_threads SET checkpoint_id = ?, error = ?, interrupts = ?, attempts = 0, attempted_at = NULL
    WHERE thread_id = ? AND state = ? AND updated_at >= ? AND checkpoint_id <= ?`,
  // A patch, in one statement: interrupts merge as a JSON merge patch keyed by task id.
  patchStatus: `UPDATE resumable_threads SET
      state = coalesce(@state, state),
      error = CASE @errorMode WHEN 1 THEN @error WHEN 2 THEN NULL ELSE error END,
      interrupts = CASE @interruptsMode WHEN 1 THEN nullif(json_patch(coalesce(interrupts, '{}'), @interrupts), '{}') WHEN 2 THEN NULL ELSE interrupts END,
      attempts = attempts + @addAttempts,
      attempted_at = coalesce(@attemptedAt, attempted_at),
      updated_at = @updatedAt
    WHERE thread_id = @thread AND checkpoint_id = @checkpoint
    RETURNING ${STATUS_COLUMNS}`,
  threadStatus: `SELECT ${STATUS_COLUMNS} FROM resumable_threads WHERE thread_id = ?`,
  threadStatusTtl: `SELECT ${STATUS_COLUMNS} FROM resumable_threads WHERE thread_id = @thread AND ${live("@thread")}`,
  blobsByKeysTtl: "", // set below, from blobsByKeys
  // A write moves a live thread's expiry forward, or creates it; an expired one is left as it is, and
  // returns no row (RETURNING reports only rows the statement changed).
  touchExpiry: `INSERT INTO resumable_thread_expiry (thread_id, expires_at) VALUES (@thread, @expires)
    ON CONFLICT (thread_id) DO UPDATE SET expires_at = excluded.expires_at WHERE resumable_thread_expiry.expires_at > @now
    RETURNING expires_at`,
  refreshExpiry: `UPDATE resumable_thread_expiry SET expires_at = @expires WHERE thread_id = @thread AND expires_at > @now AND expires_at < @expires`,
  threadExpired: `SELECT 1 AS expired FROM resumable_thread_expiry WHERE thread_id = @thread AND expires_at <= @now`,
  deleteExpiry: `DELETE FROM resumable_thread_expiry WHERE thread_id = ?`,
  expiredThreads: `SELECT thread_id FROM resumable_thread_expiry WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`,
  claimExpired: `DELETE FROM resumable_thread_expiry WHERE thread_id = ? AND expires_at <= ? RETURNING thread_id`,
};
SQL.blobsByKeysTtl = `${SQL.blobsByKeys} WHERE ${live("keys.thread_id")}`;

/**
 * Retention: a thread's records by key (without their bytes), and removals by lists of keys sent as
 * JSON arrays, so that one statement per table serves any number of records.
 */
const RETENTION_SQL = {
  threadCheckpoints: `SELECT ${CHECKPOINT_COLUMNS} FROM resumable_checkpoints c WHERE c.thread_id = ?`,
  threadBlobs: `SELECT checkpoint_ns, channel, version, type = 'empty' AS empty, base_version, refs, chunk_ref ->> 'hash' AS chunk_hash,
    length(data) AS bytes FROM resumable_blobs WHERE thread_id = ?`,
  threadWrites: `SELECT checkpoint_ns, checkpoint_id, task_id, idx, channel, refs, chunk_ref ->> 'hash' AS chunk_hash, length(data) AS bytes
    FROM resumable_writes WHERE thread_id = ?`,
  threadChunks: `SELECT hash, idx, sum(length(data)) AS bytes FROM resumable_chunks WHERE thread_id = ? GROUP BY hash, idx`,
  // @keys: [[ns, id], ...]
  deleteCheckpointsByKeys: `DELETE FROM resumable_checkpoints WHERE thread_id = @thread
    AND (checkpoint_ns, checkpoint_id) IN (SELECT k.value ->> 0, k.value ->> 1 FROM json_each(@keys) AS k)`,
  deleteWritesByKeys: `DELETE FROM resumable_writes WHERE thread_id = @thread
    AND (checkpoint_ns, checkpoint_id) IN (SELECT k.value ->> 0, k.value ->> 1 FROM json_each(@keys) AS k)`,
  // @keys: [[ns, channel, version], ...]
  deleteBlobsByKeys: `DELETE FROM resumable_blobs WHERE thread_id = @thread
    AND (checkpoint_ns, channel, version) IN (SELECT k.value ->> 0, k.value ->> 1, k.value ->> 2 FROM json_each(@keys) AS k)`,
  // @hashes: [hash, ...]; every index and part of each.
  deleteChunksByHashes: `DELETE FROM resumable_chunks WHERE thread_id = @thread AND hash IN (SELECT value FROM json_each(@hashes))`,
  // The status of the thread's new latest root checkpoint, in place of whatever the record named.
  replaceStatus: `INSERT INTO resumable_threads (thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at)
    VALUES (?, ?, ?, ?, ?, ?, 0, NULL)
    ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state, checkpoint_id = excluded.checkpoint_id, updated_at = excluded.updated_at,
      error = excluded.error, interrupts = excluded.interrupts, attempts = 0, attempted_at = NULL`,
};

/**
 * The parent chain from the target's parent, in one statement. Each row carries the channels still
 * without a seed when the walk reaches it (`pending`) and after it (`remaining`); the walk stops once
 * every requested channel has met a non-"empty" blob, so a deep thread costs only the ancestors back
 * to the nearest seeds.
 */
function historySql(ttl: boolean): string {
  return `WITH RECURSIVE chain(checkpoint_id, parent_checkpoint_id, channel_versions, delta_roots, pending, remaining, depth) AS (
      SELECT c.checkpoint_id, c.parent_checkpoint_id, c.channel_versions, c.delta_roots, @channels,
        (SELECT json_group_array(r.value) FROM json_each(@channels) AS r WHERE NOT EXISTS (
          SELECT 1 FROM json_each(c.channel_versions) AS cv CROSS JOIN resumable_blobs AS b
            ON b.thread_id = @thread AND b.checkpoint_ns = @ns AND b.channel = cv.key AND b.version = cv.value
          WHERE cv.key = r.value AND b.type <> 'empty')),
        0
      FROM resumable_checkpoints AS c
      WHERE c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = (
        SELECT t.parent_checkpoint_id FROM resumable_checkpoints AS t
        WHERE t.thread_id = @thread AND t.checkpoint_ns = @ns AND t.checkpoint_id = @id)${ttl ? ` AND ${live("@thread")}` : ""}
      UNION ALL
      SELECT c.checkpoint_id, c.parent_checkpoint_id, c.channel_versions, c.delta_roots, chain.remaining,
        (SELECT json_group_array(r.value) FROM json_each(chain.remaining) AS r WHERE NOT EXISTS (
          SELECT 1 FROM json_each(c.channel_versions) AS cv CROSS JOIN resumable_blobs AS b
            ON b.thread_id = @thread AND b.checkpoint_ns = @ns AND b.channel = cv.key AND b.version = cv.value
          WHERE cv.key = r.value AND b.type <> 'empty')),
        chain.depth + 1
      FROM chain JOIN resumable_checkpoints AS c
        ON c.thread_id = @thread AND c.checkpoint_ns = @ns AND c.checkpoint_id = chain.parent_checkpoint_id
      WHERE json_array_length(chain.remaining) > 0 AND chain.depth < ${MAX_HISTORY_DEPTH}
    )
    SELECT checkpoint_id, parent_checkpoint_id, channel_versions, delta_roots, pending FROM chain ORDER BY depth`;
}

/** Every chunk of each of `@hashes` in one thread. */
function chunksSql(ttl: boolean): string {
  return `SELECT c.hash, c.idx, c.part, c.data FROM json_each(@hashes) AS h CROSS JOIN resumable_chunks AS c
    ON c.thread_id = @thread AND c.hash = h.value${ttl ? ` WHERE ${live("@thread")}` : ""}`;
}

/** One index range of resumable_threads_state: a state, after a position, before a time. */
function statusRange(i: number, after: boolean, older: boolean, ttl: boolean): string {
  return (
    `SELECT * FROM (SELECT ${STATUS_COLUMNS} FROM resumable_threads WHERE state = @s${i}` +
    (after ? ` AND updated_at >= @afterAt AND NOT (updated_at = @afterAt AND thread_id <= @afterThread)` : "") +
    (older ? ` AND updated_at < @older` : "") +
    (ttl ? ` AND ${live("resumable_threads.thread_id")}` : "") +
    ` ORDER BY updated_at, thread_id LIMIT @limit)`
  );
}

/** listThreads: one bounded index range per state, merged; never a scan of the table. */
function listThreadsSql(states: number, after: boolean, older: boolean, ttl: boolean): string {
  const ranges = Array.from({ length: states }, (_, i) => statusRange(i, after, older, ttl));
  return states === 1 ? ranges[0]! : `SELECT * FROM (${ranges.join(" UNION ALL ")}) ORDER BY updated_at, thread_id LIMIT @limit`;
}

interface StatusRow {
  thread_id: string;
  state: ThreadState;
  checkpoint_id: string;
  updated_at: number;
  error: string | null;
  interrupts: string | null;
  attempts: number;
  attempted_at: number | null;
}

interface LeaseRow {
  token: number;
  worker_id: string;
  expires_at: number;
  released?: number;
}

interface CheckpointRow {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  checkpoint_type: string;
  checkpoint: Uint8Array;
  checkpoint_chunk_ref: string | null;
  metadata_type: string;
  metadata: Uint8Array;
  metadata_chunk_ref: string | null;
  metadata_json: string;
  channel_versions: string;
  delta_roots: string | null;
}

interface BlobRow {
  scope: number;
  channel: string;
  version: string;
  type: string;
  data: Uint8Array;
  chunk_ref: string | null;
  base_version: string | null;
  refs: string | null;
}

interface WriteRow {
  scope: number;
  checkpoint_id: string;
  task_id: string;
  idx: number;
  channel: string;
  type: string;
  data: Uint8Array;
  chunk_ref: string | null;
  task_path: string;
  refs: string | null;
}

/** A row of {@link RETENTION_SQL}.threadBlobs. */
interface BlobKeyRow {
  checkpoint_ns: string;
  channel: string;
  version: string;
  empty: number;
  base_version: string | null;
  refs: string | null;
  chunk_hash: string | null;
  bytes: number;
}

/** A row of {@link RETENTION_SQL}.threadWrites. */
interface WriteKeyRow {
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  idx: number;
  channel: string;
  refs: string | null;
  chunk_hash: string | null;
  bytes: number;
}

interface HistoryRow {
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  channel_versions: string;
  delta_roots: string | null;
  pending: string;
}

/**
 * A {@link CheckpointStore} on SQLite through better-sqlite3: one file (or `:memory:`), WAL mode,
 * versioned migrations, every write one `BEGIN IMMEDIATE` transaction.
 *
 * Several processes may share one file: writes take SQLite's write lock up front and wait for it up
 * to `busyTimeoutMs`, reads run in WAL snapshots and never block writers.
 *
 * @example
 * ```ts
 * const store = new SqliteStore("checkpoints.db", { synchronous: "FULL" });
 * await store.setup();
 * const checkpointer = new ResumableSaver(store);
 * ```
 */
export class SqliteStore implements CheckpointStore {
  /** No item limit short of SQLite's own, native metadata filters, one command event per statement. */
  readonly capabilities: StoreCapabilities;
  private readonly source: string | SqliteDatabase;
  private readonly owned: boolean;
  private readonly synchronous: SqliteSynchronous;
  private readonly busyTimeoutMs: number;
  private readonly pageSize: number;
  /** `ttlSeconds` in milliseconds; 0 without a TTL. */
  private readonly ttlMs: number;
  private readonly refreshOnRead: boolean;
  private db: SqliteDatabase | undefined;
  private opening: Promise<SqliteDatabase> | undefined;
  private configured = false;
  private configuring: Promise<void> | undefined;
  private schemaChecked = false;
  private closed = false;
  private listener: StoreCommandListener | undefined;
  private readonly statements = new Map<string, SqliteStatement>();

  /**
   * @param database A file path, `":memory:"`, or an open better-sqlite3 `Database`. A path is opened
   *   on first use (better-sqlite3 is loaded then) and closed by {@link close}; a `Database` handed in
   *   stays open, but its connection is switched to WAL with the `synchronous` and busy timeout chosen here.
   */
  constructor(database: string | SqliteDatabase, options: SqliteStoreOptions = {}) {
    const synchronous = options.synchronous ?? "FULL";
    if (synchronous !== "NORMAL" && synchronous !== "FULL") {
      throw new InvalidConfigError("synchronous", `SqliteStore: "synchronous" must be "NORMAL" or "FULL", got ${JSON.stringify(synchronous)}.`);
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000;
    if (!Number.isInteger(busyTimeoutMs) || busyTimeoutMs < 0 || busyTimeoutMs > 2 ** 31 - 1) {
      throw new InvalidConfigError("busyTimeoutMs", `SqliteStore: "busyTimeoutMs" must be a non-negative integer of milliseconds, got ${String(busyTimeoutMs)}.`);
    }
    const pageSize = options.pageSize ?? 100;
    if (!Number.isInteger(pageSize) || pageSize < 1) {
      throw new InvalidConfigError("pageSize", `SqliteStore: "pageSize" must be a positive integer, got ${String(pageSize)}.`);
    }
    const ttl = threadTtlSettings(options, "SqliteStore");
    if (typeof database === "string") {
      if (database.trim() === "") {
        throw new InvalidConfigError(
          "database",
          `SqliteStore: the database path is empty. Pass a file path (e.g. "./checkpoints.db"), or ":memory:" for a database that lives only in this process.`,
        );
      }
      this.owned = true;
    } else if (database && typeof database.prepare === "function") {
      this.owned = false;
      this.db = database;
    } else {
      throw new InvalidConfigError("database", `SqliteStore: pass a file path, ":memory:" or an open better-sqlite3 Database.`);
    }
    this.source = database;
    this.synchronous = synchronous;
    this.busyTimeoutMs = busyTimeoutMs;
    this.pageSize = pageSize;
    this.ttlMs = ttl.ttlMs;
    this.refreshOnRead = ttl.refreshOnRead;
    const memory = typeof database === "string" ? database === ":memory:" : database.memory;
    this.capabilities = {
      maxItemBytes: SQLITE_MAX_LENGTH,
      nativeMetadataFilter: true,
      persistent: !memory,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      leases: true,
      threadStatus: true,
      retention: true,
    };
  }

  /**
   * The open connection (opened first when the store was given a path), for inspection or for
   * sharing with other code. Do not close it while the store is in use.
   */
  async database(): Promise<SqliteDatabase> {
    return this.connection();
  }

  /**
   * Creates the tables, or migrates them to this package's schema version. Idempotent, and safe when
   * several processes call it at once: migrations run under SQLite's write lock.
   */
  async setup(): Promise<void> {
    await this.connection();
    await this.write(() => {
      this.probeWritable();
      this.run("CREATE migrations", CREATE_MIGRATIONS_TABLE, (s) => s.run());
      const current = this.currentVersion();
      if (current > SCHEMA_VERSION) throw this.newerSchemaError(current);
      for (const migration of MIGRATIONS) {
        if (migration.version <= current) continue;
        for (const statement of migration.statements) {
          // DDL is prepared when it runs (a statement naming a table that does not exist yet cannot be
          // prepared earlier) and is not cached.
          this.run(`MIGRATE v${migration.version}`, statement, (s) => s.run(), false);
        }
        this.run("INSERT migration", SQL.recordMigration, (s) => s.run(migration.version, new Date().toISOString()));
      }
    });
    this.schemaChecked = true;
  }

  /** Chunks, then blobs (insert-or-ignore), then the checkpoint row (upsert), in one `BEGIN IMMEDIATE` transaction. */
  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    const { record, blobs, chunks } = request;
    checkScope(record, "putCheckpoint");
    checkId(record.checkpointId, "checkpoint_id", "putCheckpoint");
    if (record.parentCheckpointId !== undefined) checkId(record.parentCheckpointId, "parent checkpoint_id", "putCheckpoint");
    for (const channel of Object.keys(record.channelVersions)) checkId(channel, "channel", "putCheckpoint");
    for (const blob of blobs) checkId(blob.channel, "channel", "putCheckpoint");
    if (request.fence) checkFence(request.fence, "putCheckpoint");
    await this.ready();
    await this.write(() => {
      // Under BEGIN IMMEDIATE's write lock: no claim can land between this check and the commit.
      if (request.fence) this.checkLease(record.threadId, request.fence, "put");
      if (this.ttlMs) this.touch(record.threadId);
      for (const chunk of chunks) this.insertChunk(record.threadId, chunk);
      for (const blob of blobs) {
        this.run("INSERT blob", SQL.insertBlob, (s) =>
          s.run(
            record.threadId,
            record.checkpointNs,
            blob.channel,
            blob.version,
            blob.value.type,
            blob.value.data,
            encodeChunkRef(blob.value.chunkRef),
            blob.baseVersion ?? null,
            encodeRefs(blob.value.refs),
          ),
        );
      }
      this.run("UPSERT checkpoint", SQL.upsertCheckpoint, (s) =>
        s.run(
          record.threadId,
          record.checkpointNs,
          record.checkpointId,
          record.parentCheckpointId ?? null,
          record.checkpoint.type,
          record.checkpoint.data,
          encodeChunkRef(record.checkpoint.chunkRef),
          record.metadata.type,
          record.metadata.data,
          encodeChunkRef(record.metadata.chunkRef),
          JSON.stringify(record.metadataJson),
          JSON.stringify(record.channelVersions),
          record.deltaRoots ? JSON.stringify(record.deltaRoots) : null,
        ),
      );
      const status = request.status;
      if (status) {
        const error = status.error ?? null;
        const interrupts = status.interrupts && Object.keys(status.interrupts).length > 0 ? JSON.stringify(status.interrupts) : null;
        const from = status.keepUpdatedAtFrom;
        const touched =
          from !== undefined &&
          this.run("UPDATE status", SQL.touchStatus, (s) =>
            s.run(record.checkpointId, error, interrupts, record.threadId, status.state, from, record.checkpointId),
          ).changes > 0;
        if (!touched) {
          this.run("UPSERT status", SQL.putStatus, (s) =>
            s.run(record.threadId, status.state, record.checkpointId, status.updatedAt, error, interrupts),
          );
        }
      }
    });
  }

  /**
   * Chunks, then the writes, in one transaction: `INSERT OR REPLACE` per `(task_id, idx)` for
   * `"upsert"`, `INSERT OR IGNORE` for `"ignore"`. Durable (per `synchronous`) once it resolves.
   */
  async putWrites(request: PutWritesRequest): Promise<void> {
    checkScope(request, "putWrites");
    checkId(request.checkpointId, "checkpoint_id", "putWrites");
    for (const write of request.writes) {
      checkId(write.taskId, "task id", "putWrites");
      checkId(write.channel, "channel", "putWrites");
    }
    if (request.fence) checkFence(request.fence, "putWrites");
    await this.ready();
    const [command, sql] = request.mode === "upsert" ? ["UPSERT write", SQL.upsertWrite] : ["INSERT write", SQL.insertWrite];
    await this.write(() => {
      if (request.fence) this.checkLease(request.threadId, request.fence, "putWrites");
      if (this.ttlMs) this.touch(request.threadId);
      for (const chunk of request.chunks) this.insertChunk(request.threadId, chunk);
      for (const write of request.writes) {
        this.run(command, sql, (s) =>
          s.run(
            request.threadId,
            request.checkpointNs,
            request.checkpointId,
            write.taskId,
            write.idx,
            write.channel,
            write.value.type,
            write.value.data,
            encodeChunkRef(write.value.chunkRef),
            write.taskPath,
            encodeRefs(write.value.refs),
          ),
        );
      }
      if (request.status) this.patch(request.threadId, request.status);
    });
  }

  /**
   * One checkpoint (by id, or the greatest id of the namespace) with its blobs (delta ranges
   * included), writes and referenced chunks: one statement.
   */
  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    checkScope(scope, "getCheckpoint");
    if (scope.checkpointId !== undefined) checkId(scope.checkpointId, "checkpoint_id", "getCheckpoint");
    await this.ready();
    const attempt = (snapshot: boolean): StoredCheckpoint | undefined | typeof RETRY_IN_SNAPSHOT => {
      const params: Record<string, unknown> = { thread: scope.threadId, ns: scope.checkpointNs };
      if (scope.checkpointId !== undefined) params.id = scope.checkpointId;
      let sql = scope.checkpointId === undefined ? SQL.oneCheckpointLatest : SQL.oneCheckpointById;
      if (this.ttlMs) {
        params.now = Date.now();
        sql = scope.checkpointId === undefined ? SQL.oneCheckpointLatestTtl : SQL.oneCheckpointByIdTtl;
      }
      const rows = this.run("SELECT checkpoint", sql, (s) => rawRows<OneRow>(s, params));
      const stored = readOneCheckpoint(scope, rows);
      if (!stored) return undefined;
      // Pieces and chunks, when the values reference any: a second statement.
      const values = [stored.record.checkpoint, stored.record.metadata, ...stored.blobs.map((b) => b.value), ...stored.writes.map((w) => w.value)];
      const chunks = this.referencedChunks([[scope.threadId, values]]);
      const mine = chunks.get(scope.threadId);
      // Chunks never change once written, and a thread's go in the same transaction as its rows: one
      // missing means the thread was deleted between the two statements, which read again in one snapshot.
      if (!snapshot && !hasEveryChunk(values, mine)) return RETRY_IN_SNAPSHOT;
      if (mine && mine.length > 0) stored.chunks = mine;
      return stored;
    };
    // The common case runs as single statements, without BEGIN and COMMIT (each statement sees a
    // committed state of its own).
    let found = await this.retryWhileBusy(() => attempt(false));
    if (found === RETRY_IN_SNAPSHOT) found = (await this.read(() => attempt(true))) as StoredCheckpoint | undefined;
    if (found && this.refreshOnRead) await this.refresh([scope.threadId]);
    return found;
  }

  /**
   * Checkpoints ordered by thread and namespace, newest first within each, fetched `pageSize` at a
   * time by keyset (never a whole thread at once), with the metadata filter evaluated in SQL. Each
   * page is read in one snapshot; pages after the first see writes committed meanwhile.
   */
  async *listCheckpoints(query: ListCheckpointsQuery): AsyncIterable<StoredCheckpoint> {
    if (query.threadId !== undefined) checkId(query.threadId, "thread_id", "listCheckpoints");
    if (query.checkpointNs !== undefined) checkNamespace(query.checkpointNs, "listCheckpoints");
    if (query.checkpointId !== undefined) checkId(query.checkpointId, "checkpoint_id", "listCheckpoints");
    if (query.before !== undefined) checkId(query.before, "before", "listCheckpoints");
    let remaining = query.limit;
    if (remaining !== undefined && (!Number.isInteger(remaining) || remaining < 0)) {
      throw new InvalidConfigError("limit", `listCheckpoints(): "limit" must be a non-negative integer, got ${String(remaining)}.`);
    }
    const conditions: string[] = [];
    const params: Record<string, unknown> = {};
    if (query.threadId !== undefined) {
      conditions.push("c.thread_id = @thread");
      params.thread = query.threadId;
    }
    if (query.checkpointNs !== undefined) {
      conditions.push("c.checkpoint_ns = @ns");
      params.ns = query.checkpointNs;
    }
    if (query.checkpointId !== undefined) {
      conditions.push("c.checkpoint_id = @id");
      params.id = query.checkpointId;
    }
    if (query.before !== undefined) {
      conditions.push("c.checkpoint_id < @before");
      params.before = query.before;
    }
    if (query.filter !== undefined) {
      const filter = metadataFilterSql(query.filter);
      conditions.push(...filter.conditions);
      Object.assign(params, filter.params);
    }
    if (this.ttlMs) conditions.push(live("c.thread_id"));
    // Keyset paging in the listing order (thread, namespace ascending; id descending): each page starts
    // strictly after the last row of the previous one, so rows are never skipped or repeated and no
    // page costs more than its own rows.
    let cursorSql = "c.checkpoint_id < @cursorId";
    if (query.checkpointNs === undefined) cursorSql = `(c.checkpoint_ns > @cursorNs OR (c.checkpoint_ns = @cursorNs AND ${cursorSql}))`;
    if (query.threadId === undefined) cursorSql = `(c.thread_id > @cursorThread OR (c.thread_id = @cursorThread AND ${cursorSql}))`;
    const select = (withCursor: boolean): string =>
      `SELECT ${CHECKPOINT_COLUMNS} FROM resumable_checkpoints AS c` +
      (conditions.length > 0 || withCursor ? ` WHERE ${[...conditions, ...(withCursor ? [cursorSql] : [])].join(" AND ")}` : "") +
      ` ORDER BY c.thread_id, c.checkpoint_ns, c.checkpoint_id DESC LIMIT @pageSize`;
    let cursor: CheckpointRow | undefined;
    for (;;) {
      const size = remaining === undefined ? this.pageSize : Math.min(this.pageSize, remaining);
      if (size <= 0) return;
      await this.ready();
      const pageParams: Record<string, unknown> = { ...params, pageSize: size };
      if (this.ttlMs) pageParams.now = Date.now();
      if (cursor) {
        pageParams.cursorId = cursor.checkpoint_id;
        if (query.checkpointNs === undefined) pageParams.cursorNs = cursor.checkpoint_ns;
        if (query.threadId === undefined) pageParams.cursorThread = cursor.thread_id;
      }
      const sql = select(cursor !== undefined);
      const { rows, stored } = await this.read(() => {
        const rows = this.run("SELECT checkpoints page", sql, (s) => s.all(pageParams)) as CheckpointRow[];
        return { rows, stored: this.withBlobsAndWrites(rows) };
      });
      if (this.refreshOnRead && rows.length > 0) await this.refresh([...new Set(rows.map((row) => row.thread_id))]);
      for (const item of stored) yield item;
      if (rows.length < size) return;
      if (remaining !== undefined) remaining -= rows.length;
      cursor = rows[rows.length - 1];
    }
  }

  /**
   * The parent chain of a checkpoint back to the nearest seed of every requested channel, with the
   * blobs and writes each ancestor contributes: one recursive query plus two lookups, whatever the depth.
   */
  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    checkScope(query, "getHistory");
    checkId(query.checkpointId, "checkpoint_id", "getHistory");
    const channels = [...new Set(query.channels)];
    if (channels.length === 0) return { ancestors: [] };
    await this.ready();
    return await this.read(() => {
      const params: Record<string, unknown> = { thread: query.threadId, ns: query.checkpointNs, id: query.checkpointId, channels: JSON.stringify(channels) };
      if (this.ttlMs) params.now = Date.now();
      const rows = this.run("SELECT history", this.ttlMs ? SQL.historyTtl : SQL.history, (s) => s.all(params)) as HistoryRow[];
      if (rows.length === 0) return { ancestors: [] };
      const ancestors = rows.map((row) => ({
        row,
        channelVersions: JSON.parse(row.channel_versions) as Record<string, string>,
        pending: new Set(JSON.parse(row.pending) as string[]),
      }));
      // Each ancestor needs its blobs (and writes) only for the channels that had no seed yet when the
      // walk reached it; the others were settled nearer the target.
      const parsed = ancestors.map((a) => ({ ...a, deltaRoots: a.row.delta_roots ? (JSON.parse(a.row.delta_roots) as Record<string, string>) : undefined }));
      const blobKeys = new Map<string, [number, string, string, string]>();
      for (const { channelVersions, deltaRoots, pending } of parsed) {
        for (const channel of pending) {
          const version = channelVersions[channel];
          if (version === undefined) continue;
          const low = deltaRoots?.[channel] ?? version;
          blobKeys.set(`${channel}\u0000${low}\u0000${version}`, [0, channel, low, version]);
        }
      }
      const blobs = new Map<string, BlobRecord>();
      if (blobKeys.size > 0) {
        const blobRows = this.run("SELECT blobs", SQL.blobsByKeys, (s) =>
          s.all({ scopes: JSON.stringify([[query.threadId, query.checkpointNs]]), keys: JSON.stringify([...blobKeys.values()]) }),
        ) as BlobRow[];
        for (const row of blobRows) blobs.set(`${row.channel}\u0000${row.version}`, toBlob(row));
      }
      const writeRows = this.run("SELECT writes", SQL.historyWrites, (s) =>
        s.all({
          thread: query.threadId,
          ns: query.checkpointNs,
          ids: JSON.stringify(rows.map((r) => r.checkpoint_id)),
          channels: JSON.stringify(channels),
        }),
      ) as WriteRow[];
      const writes = groupWrites(writeRows);
      const result: HistoryAncestor[] = parsed.map(({ row, channelVersions, deltaRoots, pending }) => {
        const ancestorBlobs: BlobRecord[] = [];
        for (const channel of pending) {
          const version = channelVersions[channel];
          if (version === undefined) continue;
          const low = deltaRoots?.[channel];
          for (const blob of blobs.values()) {
            if (blob.channel === channel && (low === undefined ? blob.version === version : blob.version >= low && blob.version <= version)) {
              ancestorBlobs.push(blob);
            }
          }
        }
        const ancestor: HistoryAncestor = {
          checkpointId: row.checkpoint_id,
          parentCheckpointId: row.parent_checkpoint_id ?? undefined,
          channelVersions,
          blobs: ancestorBlobs,
          writes: (writes.get(`0\u0000${row.checkpoint_id}`) ?? []).filter((w) => pending.has(w.channel)),
        };
        if (deltaRoots) ancestor.deltaRoots = deltaRoots;
        return ancestor;
      });
      const values = result.flatMap((a) => [...a.blobs.map((b) => b.value), ...a.writes.map((w) => w.value)]);
      return { ancestors: result, chunks: this.referencedChunks([[query.threadId, values]]).get(query.threadId) ?? [] };
    });
  }

  /** Every chunk of each hash, in one statement. */
  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    checkId(threadId, "thread_id", "getChunks");
    if (hashes.length === 0) return [];
    await this.ready();
    return this.threadChunks(threadId, new Set(hashes), this.ttlMs > 0);
  }

  /** One thread's chunks of `hashes`, asked for in sorted order (see joinParts); with `ttl`, none of an expired thread. */
  private threadChunks(threadId: string, hashes: ReadonlySet<string>, ttl: boolean): ChunkRecord[] {
    const params: Record<string, unknown> = { thread: threadId, hashes: JSON.stringify([...hashes].sort()) };
    if (ttl) params.now = Date.now();
    return joinParts(this.run("SELECT chunks", ttl ? SQL.chunksTtl : SQL.chunks, (s) => rawRows<PartRow>(s, params)));
  }

  /** Blobs by `(channel, version)` in one query; missing ones are left out. */
  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    checkScope(scope, "getBlobs");
    if (keys.length === 0) return [];
    await this.ready();
    const params: Record<string, unknown> = {
      scopes: JSON.stringify([[scope.threadId, scope.checkpointNs]]),
      keys: JSON.stringify(keys.map((k) => [0, k.channel, k.version, k.version])),
    };
    if (this.ttlMs) params.now = Date.now();
    const rows = this.run("SELECT blobs", this.ttlMs ? SQL.blobsByKeysTtl : SQL.blobsByKeys, (s) => s.all(params)) as BlobRow[];
    return rows.map(toBlob);
  }

  /** Deletes the thread's rows from every table, all namespaces, in one transaction. */
  async deleteThread(threadId: string): Promise<void> {
    checkId(threadId, "thread_id", "deleteThread");
    await this.ready();
    await this.write(() => this.deleteRows(threadId));
  }

  /**
   * Every record of the thread by key, for retention: four selects in one read transaction (one
   * snapshot), whatever the thread's length. An expired thread (`ttlSeconds`) has none.
   */
  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    checkId(threadId, "thread_id", "listThreadRecords");
    await this.ready();
    return await this.read(() => {
      const out: ThreadRecords = { checkpoints: [], blobs: [], writes: [], chunks: [] };
      if (this.ttlMs && this.run("SELECT expiry", SQL.threadExpired, (s) => s.get({ thread: threadId, now: Date.now() }))) return out;
      const checkpoints = this.run("SELECT checkpoints", RETENTION_SQL.threadCheckpoints, (s) => s.all(threadId)) as CheckpointRow[];
      for (const row of checkpoints) {
        out.checkpoints.push(toRecord(row, JSON.parse(row.channel_versions) as Record<string, string>, row.delta_roots ? (JSON.parse(row.delta_roots) as Record<string, string>) : undefined));
      }
      const blobs = this.run("SELECT blobs", RETENTION_SQL.threadBlobs, (s) => s.all(threadId)) as BlobKeyRow[];
      for (const row of blobs) {
        out.blobs.push({
          checkpointNs: row.checkpoint_ns,
          channel: row.channel,
          version: row.version,
          empty: row.empty === 1,
          bytes: Number(row.bytes),
          ...(row.base_version !== null ? { baseVersion: row.base_version } : {}),
          ...(row.refs !== null ? { refs: JSON.parse(row.refs) as string[] } : {}),
          ...(row.chunk_hash !== null ? { chunkHash: row.chunk_hash } : {}),
        });
      }
      const writes = this.run("SELECT writes", RETENTION_SQL.threadWrites, (s) => s.all(threadId)) as WriteKeyRow[];
      for (const row of writes) {
        out.writes.push({
          checkpointNs: row.checkpoint_ns,
          checkpointId: row.checkpoint_id,
          taskId: row.task_id,
          idx: row.idx,
          channel: row.channel,
          bytes: Number(row.bytes),
          ...(row.refs !== null ? { refs: JSON.parse(row.refs) as string[] } : {}),
          ...(row.chunk_hash !== null ? { chunkHash: row.chunk_hash } : {}),
        });
      }
      const chunks = this.run("SELECT chunks", RETENTION_SQL.threadChunks, (s) => s.all(threadId)) as Array<{ hash: string; idx: number; bytes: number }>;
      for (const row of chunks) out.chunks.push({ hash: row.hash, index: row.idx, bytes: Number(row.bytes) });
      return out;
    });
  }

  /**
   * Removes the listed records of one thread in one `BEGIN IMMEDIATE` transaction (a statement per
   * table), after checking the fence under the write lock; a crash leaves all of it or none.
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    checkId(request.threadId, "thread_id", "deleteRecords");
    for (const c of request.checkpoints) {
      checkNamespace(c.checkpointNs, "deleteRecords");
      checkId(c.checkpointId, "checkpoint_id", "deleteRecords");
    }
    for (const b of request.blobs) {
      checkNamespace(b.checkpointNs, "deleteRecords");
      checkId(b.channel, "channel", "deleteRecords");
    }
    if (request.fence) checkFence(request.fence, "deleteRecords");
    await this.ready();
    const thread = request.threadId;
    await this.write(() => {
      if (request.fence) this.checkLease(thread, request.fence, "deleteRecords");
      if (request.checkpoints.length > 0) {
        const keys = JSON.stringify(request.checkpoints.map((c) => [c.checkpointNs, c.checkpointId]));
        this.run("DELETE checkpoints", RETENTION_SQL.deleteCheckpointsByKeys, (s) => s.run({ thread, keys }));
        this.run("DELETE writes", RETENTION_SQL.deleteWritesByKeys, (s) => s.run({ thread, keys }));
      }
      if (request.blobs.length > 0) {
        const keys = JSON.stringify(request.blobs.map((b) => [b.checkpointNs, b.channel, b.version]));
        this.run("DELETE blobs", RETENTION_SQL.deleteBlobsByKeys, (s) => s.run({ thread, keys }));
      }
      if (request.chunks.length > 0) {
        this.run("DELETE chunks", RETENTION_SQL.deleteChunksByHashes, (s) => s.run({ thread, hashes: JSON.stringify(request.chunks) }));
      }
      if (request.status === null) this.run("DELETE status", SQL.deleteStatus, (s) => s.run(thread));
      else if (request.status) this.replaceStatus(thread, request.status.checkpointId, request.status.write);
    });
  }

  /**
   * Deletes threads whose `ttlSeconds` passed since their last write (at most `limit` per call, 100 by
   * default, oldest expiry first) and returns how many. An expired thread is already invisible to
   * reads, as a whole; this reclaims its rows: each thread in its own `BEGIN IMMEDIATE` transaction,
   * which deletes exactly what {@link deleteThread} deletes (the lease row stays), so a crash leaves a
   * thread whole or gone and readers never see part of one. A thread written since it was picked is
   * skipped. The expired rows are read through an index on the expiry: the cost follows what expired,
   * not the number of threads. Several processes may sweep at once. Without `ttlSeconds` it returns 0.
   * Run it from a timer, for example:
   *
   * ```ts
   * setInterval(() => store.deleteExpiredThreads({ limit: 1000 }).catch(console.error), 60_000).unref();
   * ```
   */
  async deleteExpiredThreads(options: { limit?: number } = {}): Promise<number> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) {
      throw new InvalidConfigError("limit", `SqliteStore.deleteExpiredThreads(): "limit" must be an integer from 1 to 100000, got ${String(limit)}.`);
    }
    if (!this.ttlMs) return 0;
    await this.ready();
    const expired = this.run("SELECT expired threads", SQL.expiredThreads, (s) => s.all(Date.now(), limit)) as Array<{ thread_id: string }>;
    let deleted = 0;
    for (const { thread_id: threadId } of expired) {
      const gone = await this.write(() => {
        // Still expired under the write lock (a write may have moved it since, another sweep taken it).
        if (!this.run("DELETE expiry", SQL.claimExpired, (s) => s.get(threadId, Date.now()))) return false;
        this.deleteRows(threadId, false);
        return true;
      });
      if (gone) deleted += 1;
    }
    return deleted;
  }

  /**
   * Claims the thread in one statement under the write lock: an upsert that takes a free lease (never
   * claimed, released, expired by this machine's clock) or the same worker's, and raises the token.
   */
  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    checkId(claim.threadId, "thread_id", "claimLease");
    checkIdentifier(claim.workerId, ID_RULES.workerId, "SqliteStore.claimLease()");
    await this.ready();
    return await this.write(() => {
      const now = Date.now();
      const row = this.run("CLAIM lease", SQL.claimLease, (s) =>
        s.get({ thread: claim.threadId, worker: claim.workerId, expires: now + claim.ttlMs, now }),
      ) as LeaseRow | undefined;
      return row ? toLease(claim.threadId, row) : undefined;
    });
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    checkId(lease.threadId, "thread_id", "renewLease");
    checkFence(lease, "renewLease");
    await this.ready();
    return await this.write(() => {
      const row = this.run("RENEW lease", SQL.renewLease, (s) =>
        s.get({ thread: lease.threadId, token: lease.token, expires: Date.now() + ttlMs }),
      ) as LeaseRow | undefined;
      if (!row) this.checkLease(lease.threadId, lease, "renewLease");
      return toLease(lease.threadId, row!);
    });
  }

  async releaseLease(lease: Lease): Promise<void> {
    checkId(lease.threadId, "thread_id", "releaseLease");
    checkFence(lease, "releaseLease");
    await this.ready();
    await this.write(() => {
      this.run("RELEASE lease", SQL.releaseLease, (s) => s.run(lease.threadId, lease.token));
    });
  }

  async getLease(threadId: string): Promise<LeaseState | undefined> {
    checkId(threadId, "thread_id", "getLease");
    await this.ready();
    const row = this.run("SELECT lease", SQL.lease, (s) => s.get(threadId)) as LeaseRow | undefined;
    return row ? { ...toLease(threadId, row), released: row.released === 1 } : undefined;
  }

  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    checkId(threadId, "thread_id", "getThreadStatus");
    await this.ready();
    const row = (
      this.ttlMs
        ? this.run("SELECT status", SQL.threadStatusTtl, (s) => s.get({ thread: threadId, now: Date.now() }))
        : this.run("SELECT status", SQL.threadStatus, (s) => s.get(threadId))
    ) as StatusRow | undefined;
    return row ? toStatus(row) : undefined;
  }

  /**
   * One statement: a `LIMIT`ed range of the `(state, updated_at, thread_id)` index per state, merged
   * (see `listThreadsSql`), so the cost follows the page, not the table.
   */
  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    const states = [...new Set(query.states ?? THREAD_STATES)];
    if (states.length === 0) throw new InvalidConfigError("states", `SqliteStore.listThreads(): "states" is empty.`);
    if (!Number.isInteger(query.limit) || query.limit < 1) {
      throw new InvalidConfigError("limit", `SqliteStore.listThreads(): "limit" must be a positive integer, got ${String(query.limit)}.`);
    }
    const params: Record<string, unknown> = { limit: query.limit };
    states.forEach((state, i) => (params[`s${i}`] = state));
    if (query.after) {
      params.afterAt = query.after.updatedAt;
      params.afterThread = query.after.threadId;
    }
    if (query.olderThan !== undefined) params.older = query.olderThan;
    await this.ready();
    if (this.ttlMs) params.now = Date.now();
    const sql = listThreadsSql(states.length, query.after !== undefined, query.olderThan !== undefined, this.ttlMs > 0);
    const rows = this.run("SELECT threads", sql, (s) => s.all(params)) as StatusRow[];
    return rows.map(toStatus);
  }

  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    checkId(request.threadId, "thread_id", "patchThreadStatus");
    if (request.fence) checkFence(request.fence, "patchThreadStatus");
    await this.ready();
    return await this.write(() => {
      if (request.fence) this.checkLease(request.threadId, request.fence, "status change");
      // An expired thread's status is gone for readers: there is nothing to patch.
      if (this.ttlMs && this.run("SELECT expiry", SQL.threadExpired, (s) => s.get({ thread: request.threadId, now: Date.now() }))) return undefined;
      return this.patch(request.threadId, request.patch);
    });
  }

  /**
   * Registers a listener called after every SQL statement this store executes, transaction control
   * included (`"BEGIN IMMEDIATE"`, `"INSERT blob"`, `"COMMIT"`...). Each statement is its own
   * execution, so a listener that kills the process after the k-th command stops it mid-transaction.
   */
  instrument(listener: StoreCommandListener | undefined): void {
    this.listener = listener;
  }

  /** Closes the database if this store opened it (from a path); a `Database` handed in stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const db = this.db ?? (this.opening ? await this.opening.catch(() => undefined) : undefined);
    this.statements.clear();
    if (this.owned && db?.open) db.close();
  }

  private get label(): string {
    const name = typeof this.source === "string" ? this.source : this.source.name;
    return `SqliteStore (${JSON.stringify(name)})`;
  }

  /** The open, configured connection; the file is opened on first use. */
  private async connection(): Promise<SqliteDatabase> {
    if (this.closed) throw new StoreClosedError(this.label);
    let db = this.db;
    if (!db) {
      this.opening ??= loadDriver().then((Database) => new Database(this.source as string, { timeout: Math.min(IN_CALL_BUSY_MS, this.busyTimeoutMs) }));
      try {
        db = await this.opening;
      } catch (error) {
        // Let a later call try again (the directory may be created, the driver installed meanwhile).
        this.opening = undefined;
        throw error;
      }
      if (this.closed) {
        db.close();
        throw new StoreClosedError(this.label);
      }
      this.db = db;
    }
    if (!db.open) throw new StoreClosedError(this.label);
    if (!this.configured) {
      this.configuring ??= this.configure(db).finally(() => {
        this.configuring = undefined;
      });
      await this.configuring;
      this.configured = true;
    }
    return db;
  }

  /** The connection, after checking once that the schema is set up and current. */
  private async ready(): Promise<SqliteDatabase> {
    const db = await this.connection();
    if (!this.schemaChecked) {
      const current = this.currentVersion();
      if (current > SCHEMA_VERSION) throw this.newerSchemaError(current);
      if (current < SCHEMA_VERSION) {
        throw new StoreNotSetUpError(this.label, `its schema is at version ${current}, this package needs version ${SCHEMA_VERSION}`);
      }
      this.schemaChecked = true;
    }
    return db;
  }

  private async configure(db: SqliteDatabase): Promise<void> {
    // Numbers and names below are validated in the constructor; PRAGMA takes no bound parameters.
    db.pragma(`busy_timeout = ${Math.min(IN_CALL_BUSY_MS, this.busyTimeoutMs)}`);
    if (!db.memory) {
      // Switching to WAL needs a moment of exclusive access, which a second process opening the same
      // new file may hold; retry within the busy timeout. Once the file is in WAL mode this is a no-op.
      await this.retryWhileBusy(() => db.pragma("journal_mode = WAL"));
      this.emit("PRAGMA journal_mode");
    }
    this.emit("PRAGMA busy_timeout");
    db.pragma(`synchronous = ${this.synchronous}`);
    this.emit("PRAGMA synchronous");
  }

  /**
   * Rewrites the header's user_version with its own value: a write that changes nothing, so that a
   * read-only file (permissions, a read-only mount, a Database opened with `readonly: true`) fails
   * here, at setup, rather than at the first put.
   */
  private probeWritable(): void {
    const version = this.run("PRAGMA user_version", "PRAGMA user_version", (s) => s.get()) as { user_version: number } | undefined;
    const value = Math.trunc(Number(version?.user_version ?? 0));
    this.run("PRAGMA user_version =", `PRAGMA user_version = ${value}`, (s) => s.run(), false);
  }

  private currentVersion(): number {
    const row = this.run("SELECT schema version", SQL.schemaVersion, (s) => s.get()) as { version: number | null } | undefined;
    return row?.version ?? 0;
  }

  private newerSchemaError(current: number): StoreNotSetUpError {
    return new StoreNotSetUpError(
      this.label,
      `its schema is at version ${current}, written by a newer @resumable/sqlite (this one knows version ${SCHEMA_VERSION}); ` +
        `upgrade @resumable/sqlite in this program`,
    );
  }

  /** Inside a write transaction: every row of the thread but its lease, whose token must keep growing if the thread is created again. */
  private deleteRows(threadId: string, expiry = this.ttlMs > 0): void {
    this.run("DELETE checkpoints", SQL.deleteCheckpoints, (s) => s.run(threadId));
    this.run("DELETE blobs", SQL.deleteBlobs, (s) => s.run(threadId));
    this.run("DELETE writes", SQL.deleteWrites, (s) => s.run(threadId));
    this.run("DELETE chunks", SQL.deleteChunks, (s) => s.run(threadId));
    this.run("DELETE status", SQL.deleteStatus, (s) => s.run(threadId));
    if (expiry) this.run("DELETE expiry", SQL.deleteExpiry, (s) => s.run(threadId));
  }

  /**
   * Inside a write's transaction (with `ttlSeconds`): moves the thread's expiry to now + TTL, so the
   * write and its expiry commit together. A thread that already expired is deleted first (readers see
   * it gone already), so the write starts it anew and nothing of the old run shows through.
   */
  private touch(threadId: string): void {
    const now = Date.now();
    const params = { thread: threadId, now, expires: now + this.ttlMs };
    if (this.run("UPSERT expiry", SQL.touchExpiry, (s) => s.get(params))) return;
    this.deleteRows(threadId);
    this.run("UPSERT expiry", SQL.touchExpiry, (s) => s.get(params));
  }

  /** `refreshOnRead`: after a read, moves the expiry of threads still live forward, in one transaction. */
  private async refresh(threadIds: string[]): Promise<void> {
    await this.write(() => {
      const now = Date.now();
      for (const thread of threadIds) this.run("UPDATE expiry", SQL.refreshExpiry, (s) => s.run({ thread, now, expires: now + this.ttlMs }));
    });
  }

  /** Inside a write transaction: throws {@link LeaseLostError} unless the thread's lease still carries the fence's token. */
  private checkLease(threadId: string, fence: LeaseFence, operation: string): void {
    const row = this.run("SELECT lease", SQL.lease, (s) => s.get(threadId)) as LeaseRow | undefined;
    if (row && row.token === fence.token && row.released === 0) return;
    throw new LeaseLostError(threadId, fence.token, row ? { token: row.token, holder: row.released === 1 ? null : row.worker_id } : {}, operation);
  }

  /** Inside a write transaction: the thread's status becomes `write`, for `checkpointId`, whatever it named. */
  private replaceStatus(threadId: string, checkpointId: string, write: ThreadStatusWrite): void {
    this.run("UPSERT status", RETENTION_SQL.replaceStatus, (s) =>
      s.run(
        threadId,
        write.state,
        checkpointId,
        write.updatedAt,
        write.error ?? null,
        write.interrupts && Object.keys(write.interrupts).length > 0 ? JSON.stringify(write.interrupts) : null,
      ),
    );
  }

  /** Inside a write transaction: one UPDATE applying the patch when the record names its checkpoint. */
  private patch(threadId: string, patch: ThreadStatusPatch): ThreadStatusRecord | undefined {
    const row = this.run("UPDATE status", SQL.patchStatus, (s) =>
      s.get({
        thread: threadId,
        checkpoint: patch.checkpointId,
        state: patch.state ?? null,
        errorMode: patch.error === undefined ? 0 : patch.error === null ? 2 : 1,
        error: typeof patch.error === "string" ? patch.error : null,
        interruptsMode: patch.interrupts === undefined ? 0 : patch.interrupts === null ? 2 : 1,
        interrupts: patch.interrupts ? JSON.stringify(patch.interrupts) : null,
        addAttempts: patch.addAttempts ?? 0,
        attemptedAt: patch.attemptedAt ?? null,
        updatedAt: patch.updatedAt,
      }),
    ) as StatusRow | undefined;
    return row ? toStatus(row) : undefined;
  }

  /**
   * A chunk in equal rows of at most {@link PART_BYTES} bytes, so that a page holds several: a 2 KB
   * message in one row would fill half a 4 KB page and leave the rest empty. Insert-or-ignore: when
   * part 0 is there already, the chunk is stored whole (its parts are written in one transaction, and
   * removed together), perhaps in parts of another size by an earlier release, which ours must not
   * join; the other parts are then not sent at all.
   */
  private insertChunk(threadId: string, chunk: ChunkRecord): void {
    const { data } = chunk;
    const size = Math.max(1, Math.ceil(data.byteLength / Math.max(1, Math.ceil(data.byteLength / PART_BYTES))));
    for (let part = 0, offset = 0; offset < data.byteLength || part === 0; part += 1, offset += size) {
      const slice = data.subarray(offset, offset + size);
      const { changes } = this.run("INSERT chunk", SQL.insertChunk, (s) => s.run(threadId, chunk.hash, chunk.index, part, slice));
      if (part === 0 && changes === 0) return;
    }
  }

  /**
   * Loads the blobs (delta ranges included), writes and referenced chunks of a page of checkpoint
   * rows: three statements, whatever the page size.
   */
  private withBlobsAndWrites(rows: CheckpointRow[]): StoredCheckpoint[] {
    if (rows.length === 0) return [];
    const scopes: Array<[string, string]> = [];
    const scopeIndex = new Map<string, number>();
    const blobKeys = new Map<string, [number, string, string, string]>();
    const checkpointKeys: Array<[number, string]> = [];
    const parsed = rows.map((row) => {
      const key = `${row.thread_id}\u0000${row.checkpoint_ns}`;
      let scope = scopeIndex.get(key);
      if (scope === undefined) {
        scope = scopes.length;
        scopes.push([row.thread_id, row.checkpoint_ns]);
        scopeIndex.set(key, scope);
      }
      const channelVersions = JSON.parse(row.channel_versions) as Record<string, string>;
      const deltaRoots = row.delta_roots ? (JSON.parse(row.delta_roots) as Record<string, string>) : undefined;
      for (const [channel, version] of Object.entries(channelVersions)) {
        const low = deltaRoots?.[channel] ?? version;
        blobKeys.set(`${scope}\u0000${channel}\u0000${low}\u0000${version}`, [scope, channel, low, version]);
      }
      checkpointKeys.push([scope, row.checkpoint_id]);
      return { row, scope, channelVersions, deltaRoots };
    });
    const scopesJson = JSON.stringify(scopes);
    /** scope → channel → blobs of that channel, in any order */
    const blobs = new Map<number, Map<string, BlobRecord[]>>();
    if (blobKeys.size > 0) {
      const blobRows = this.run("SELECT blobs", SQL.blobsByKeys, (s) =>
        s.all({ scopes: scopesJson, keys: JSON.stringify([...blobKeys.values()]) }),
      ) as BlobRow[];
      // Ranges of checkpoints in one page may overlap: each blob is kept once per scope.
      const seen = new Set<string>();
      for (const row of blobRows) {
        const id = `${row.scope}\u0000${row.channel}\u0000${row.version}`;
        if (seen.has(id)) continue;
        seen.add(id);
        const byChannel = blobs.get(row.scope) ?? new Map<string, BlobRecord[]>();
        blobs.set(row.scope, byChannel);
        const list = byChannel.get(row.channel) ?? [];
        byChannel.set(row.channel, list);
        list.push(toBlob(row));
      }
    }
    const writeRows = this.run("SELECT writes", SQL.writesByCheckpoints, (s) =>
      s.all({ scopes: scopesJson, keys: JSON.stringify(checkpointKeys) }),
    ) as WriteRow[];
    const writes = groupWrites(writeRows);
    const out = parsed.map(({ row, scope, channelVersions, deltaRoots }) => {
      const found: BlobRecord[] = [];
      for (const [channel, version] of Object.entries(channelVersions)) {
        const low = deltaRoots?.[channel];
        for (const blob of blobs.get(scope)?.get(channel) ?? []) {
          if (low === undefined ? blob.version === version : blob.version >= low && blob.version <= version) found.push(blob);
        }
      }
      const stored: StoredCheckpoint = { record: toRecord(row, channelVersions, deltaRoots), blobs: found, writes: writes.get(`${scope}\u0000${row.checkpoint_id}`) ?? [] };
      return stored;
    });
    const chunks = this.referencedChunks(out.map((o) => [o.record.threadId, [...o.blobs.map((b) => b.value), ...o.writes.map((w) => w.value)]]));
    for (const stored of out) {
      const mine = chunks.get(stored.record.threadId);
      if (mine && mine.length > 0) stored.chunks = mine;
    }
    return out;
  }

  /**
   * The chunks and pieces that values reference, fetched in one statement, by thread: for one thread
   * (every read but a list across threads) by its hashes alone, which is a third cheaper than by
   * `[thread, hash]` pairs (two JSON extractions a row).
   */
  private referencedChunks(groups: Array<[string, SerializedValue[]]>): Map<string, ChunkRecord[]> {
    const byThread = new Map<string, Set<string>>();
    for (const [threadId, values] of groups) {
      let hashes = byThread.get(threadId);
      for (const value of values) {
        if (!value.refs?.length && !value.chunkRef) continue;
        if (!hashes) byThread.set(threadId, (hashes = new Set()));
        for (const hash of value.refs ?? []) hashes.add(hash);
        if (value.chunkRef) hashes.add(value.chunkRef.hash);
      }
    }
    const out = new Map<string, ChunkRecord[]>();
    if (byThread.size === 1) {
      const [threadId, hashes] = byThread.entries().next().value!;
      out.set(threadId, this.threadChunks(threadId, hashes, false));
    } else if (byThread.size > 1) {
      const keys: Array<[string, string]> = [];
      for (const [threadId, hashes] of byThread) for (const hash of [...hashes].sort()) keys.push([threadId, hash]);
      const params = { keys: JSON.stringify(keys) };
      const rows = this.run("SELECT chunks", SQL.chunksByKeys, (s) => rawRows<[...PartRow, string]>(s, params));
      const parts = new Map<string, PartRow[]>();
      for (const row of rows) {
        const list = parts.get(row[4]) ?? [];
        parts.set(row[4], list);
        list.push(row as unknown as PartRow);
      }
      for (const [threadId, list] of parts) out.set(threadId, joinParts(list));
    }
    return out;
  }

  /** Runs `body` in one write transaction (`BEGIN IMMEDIATE`, or a savepoint inside the caller's transaction). */
  private write<T>(body: () => T): Promise<T> {
    return this.retryWhileBusy(() => this.transaction("BEGIN IMMEDIATE", body));
  }

  /** Runs `body` in one read transaction, so that its statements see one snapshot. */
  private read<T>(body: () => T): Promise<T> {
    return this.retryWhileBusy(() => this.transaction("BEGIN", body));
  }

  /**
   * Runs a whole transaction (synchronously: nothing else can use the connection in between) and,
   * when another connection holds the lock, tries again after an asynchronous pause, until
   * `busyTimeoutMs` has passed. SQLite's own busy handler sleeps inside the call and would freeze the
   * event loop for the whole wait; here it waits at most {@link IN_CALL_BUSY_MS} per attempt. Every
   * transaction body is safe to run again: a failed attempt was rolled back.
   */
  private async retryWhileBusy<T>(attempt: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    let pause = 1;
    for (;;) {
      try {
        return attempt();
      } catch (error) {
        if (!isBusy(error)) throw error;
        const left = deadline - Date.now();
        if (left <= 0) throw new StoreBusyError(this.label, this.busyTimeoutMs, error);
        await sleep(Math.min(pause * (0.5 + Math.random()), left));
        pause = Math.min(pause * 2, MAX_BUSY_PAUSE_MS);
      }
    }
  }

  private transaction<T>(begin: "BEGIN" | "BEGIN IMMEDIATE", body: () => T): T {
    const db = this.db!;
    const nested = db.inTransaction;
    if (nested) this.run("SAVEPOINT", "SAVEPOINT resumable", (s) => s.run());
    else this.run(begin, begin, (s) => s.run());
    try {
      const result = body();
      if (nested) this.run("RELEASE", "RELEASE resumable", (s) => s.run());
      else this.run("COMMIT", "COMMIT", (s) => s.run());
      return result;
    } catch (error) {
      this.rollback(db, nested);
      throw error;
    }
  }

  private rollback(db: SqliteDatabase, nested: boolean): void {
    if (!db.open || !db.inTransaction) return;
    try {
      if (nested) {
        this.run("ROLLBACK TO", "ROLLBACK TO resumable", (s) => s.run());
        this.run("RELEASE", "RELEASE resumable", (s) => s.run());
      } else {
        this.run("ROLLBACK", "ROLLBACK", (s) => s.run());
      }
    } catch {
      // The original error is the one to report; SQLite rolls back an unfinished transaction anyway.
    }
  }

  /** Prepares (cached) and executes one statement, then reports it to the listener. */
  private run<T>(command: string, sql: string, execute: (statement: SqliteStatement) => T, cache = true): T {
    const db = this.db;
    if (!db || this.closed) throw new StoreClosedError(this.label);
    let result: T;
    try {
      let statement = cache ? this.statements.get(sql) : undefined;
      if (!statement) {
        statement = db.prepare(sql);
        if (cache) {
          // List queries vary with the filter's shape; keep the cache bounded, dropping the oldest.
          if (this.statements.size >= MAX_CACHED_STATEMENTS) this.statements.delete(this.statements.keys().next().value!);
          this.statements.set(sql, statement);
        }
      }
      result = execute(statement);
    } catch (error) {
      throw this.translate(error);
    }
    this.emit(command);
    return result;
  }

  private emit(command: string): void {
    this.listener?.({ command });
  }

  private translate(error: unknown): unknown {
    const message = error instanceof Error ? error.message : "";
    const missing = /no such table: (\S+)/.exec(message);
    if (missing) {
      return new StoreNotSetUpError(this.label, `table ${missing[1]} does not exist`, { cause: error });
    }
    if (/database connection is not open/.test(message)) return new StoreClosedError(this.label);
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === "string" && code.startsWith("SQLITE_READONLY")) {
      return new StoreReadOnlyError(
        this.label,
        `SQLite refused to write (${code}): the file or its directory is not writable by this process, it is on a read-only ` +
          `mount, or the Database was opened with { readonly: true }. The saver needs write access to the file, its -wal and -shm files and the directory`,
        { cause: error },
      );
    }
    return error;
  }
}

/** Assembles the rows of {@link oneCheckpoint}. */
function readOneCheckpoint(scope: ThreadScope, rows: OneRow[]): StoredCheckpoint | undefined {
  let record: CheckpointRecord | undefined;
  const blobs: BlobRecord[] = [];
  const writes: WriteRecord[] = [];
  for (const [kind, a, b, type, data, chunkRef, e, f, g, h, i, j] of rows) {
    switch (kind) {
      case "c": {
        const channelVersions = JSON.parse(i!) as Record<string, string>;
        record = {
          threadId: scope.threadId,
          checkpointNs: scope.checkpointNs,
          checkpointId: a,
          parentCheckpointId: (b as string | null) ?? undefined,
          checkpoint: toValue(type!, data!, chunkRef),
          metadata: toValue(e!, f as Uint8Array, g),
          metadataJson: JSON.parse(h!) as Record<string, unknown>,
          channelVersions,
        };
        if (j !== null) record.deltaRoots = JSON.parse(j) as Record<string, string>;
        break;
      }
      case "b": {
        const blob: BlobRecord = { channel: a, version: b as string, value: toValue(type!, data!, chunkRef, f as string | null) };
        if (e !== null) blob.baseVersion = e;
        blobs.push(blob);
        break;
      }
      case "w":
        writes.push({ taskId: a, idx: b as number, channel: e!, value: toValue(type!, data!, chunkRef, f as string | null), taskPath: g! });
        break;
    }
  }
  return record ? { record, blobs, writes } : undefined;
}

/** A row of the chunks table, one part of one chunk, as an array: `[hash, idx, part, data]`. */
type PartRow = [hash: string, idx: number, part: number, data: Uint8Array];

/** A statement's rows as arrays, in its columns' order (better-sqlite3's raw mode, when the connection has it). */
function rawRows<T extends unknown[]>(statement: SqliteStatement, params: Record<string, unknown>): T[] {
  return (statement.raw ? statement.raw(true).all(params) : statement.all(params).map((row) => Object.values(row as object))) as T[];
}

/** Returned by a read outside a transaction that must be read again in one snapshot. */
const RETRY_IN_SNAPSHOT = Symbol("retry in snapshot");

/** Whether every chunk and piece the values reference has at least one row among `found`. */
function hasEveryChunk(values: SerializedValue[], found: ChunkRecord[] | undefined): boolean {
  const have = new Set((found ?? []).map((c) => c.hash));
  for (const value of values) {
    if (value.chunkRef && !have.has(value.chunkRef.hash)) return false;
    for (const hash of value.refs ?? []) if (!have.has(hash)) return false;
  }
  return true;
}

/**
 * Chunks from their parts. The statements have no ORDER BY: given hashes in sorted order, SQLite's plan
 * (the hashes in turn, each an index range of the primary key) returns the rows sorted by hash, index
 * and part. Rows in any other order are sorted here first, so a different plan costs time, never bytes.
 */
function joinParts(rows: PartRow[]): ChunkRecord[] {
  if (!partsSorted(rows)) rows = [...rows].sort(comparePartRows);
  const out: ChunkRecord[] = [];
  for (let i = 0; i < rows.length; ) {
    const [hash, idx] = rows[i]!;
    let j = i + 1;
    while (j < rows.length && rows[j]![0] === hash && rows[j]![1] === idx) j += 1;
    if (j === i + 1) {
      out.push({ hash, index: idx, data: bytes(rows[i]![3]) });
    } else {
      let size = 0;
      for (let k = i; k < j; k += 1) size += rows[k]![3].byteLength;
      const data = new Uint8Array(size);
      for (let k = i, offset = 0; k < j; k += 1) {
        data.set(rows[k]![3], offset);
        offset += rows[k]![3].byteLength;
      }
      out.push({ hash, index: idx, data });
    }
    i = j;
  }
  return out;
}

function comparePartRows(a: PartRow, b: PartRow): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1] || a[2] - b[2];
}

function partsSorted(rows: PartRow[]): boolean {
  for (let i = 1; i < rows.length; i += 1) if (comparePartRows(rows[i - 1]!, rows[i]!) >= 0) return false;
  return true;
}

/** Blob and write rows may come back as Buffers; the contract speaks plain Uint8Arrays. */
function bytes(data: Uint8Array | null): Uint8Array {
  if (!data) return new Uint8Array(0);
  return Object.getPrototypeOf(data) === Uint8Array.prototype ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function encodeChunkRef(ref: ChunkRef | undefined): string | null {
  return ref ? JSON.stringify({ hash: ref.hash, count: ref.count, size: ref.size }) : null;
}

function encodeRefs(refs: string[] | undefined): string | null {
  return refs && refs.length > 0 ? JSON.stringify(refs) : null;
}

function toValue(type: string, data: Uint8Array, chunkRef: string | null, refs: string | null = null): SerializedValue {
  const value: SerializedValue = { type, data: bytes(data) };
  if (chunkRef !== null) value.chunkRef = JSON.parse(chunkRef) as ChunkRef;
  if (refs !== null) value.refs = JSON.parse(refs) as string[];
  return value;
}

function toRecord(row: CheckpointRow, channelVersions: Record<string, string>, deltaRoots: Record<string, string> | undefined): CheckpointRecord {
  const record: CheckpointRecord = {
    threadId: row.thread_id,
    checkpointNs: row.checkpoint_ns,
    checkpointId: row.checkpoint_id,
    parentCheckpointId: row.parent_checkpoint_id ?? undefined,
    checkpoint: toValue(row.checkpoint_type, row.checkpoint, row.checkpoint_chunk_ref),
    metadata: toValue(row.metadata_type, row.metadata, row.metadata_chunk_ref),
    metadataJson: JSON.parse(row.metadata_json) as Record<string, unknown>,
    channelVersions,
  };
  if (deltaRoots) record.deltaRoots = deltaRoots;
  return record;
}

function toBlob(row: BlobRow): BlobRecord {
  const blob: BlobRecord = { channel: row.channel, version: row.version, value: toValue(row.type, row.data, row.chunk_ref, row.refs) };
  if (row.base_version !== null) blob.baseVersion = row.base_version;
  return blob;
}

function toWrite(row: WriteRow): WriteRecord {
  return { taskId: row.task_id, idx: row.idx, channel: row.channel, value: toValue(row.type, row.data, row.chunk_ref, row.refs), taskPath: row.task_path };
}

/** Writes grouped by `scope\0checkpointId`. */
function groupWrites(rows: WriteRow[]): Map<string, WriteRecord[]> {
  const out = new Map<string, WriteRecord[]>();
  for (const row of rows) {
    const key = `${row.scope}\u0000${row.checkpoint_id}`;
    const list = out.get(key);
    if (list) list.push(toWrite(row));
    else out.set(key, [toWrite(row)]);
  }
  return out;
}

function toLease(threadId: string, row: LeaseRow): Lease {
  return { threadId, workerId: row.worker_id, token: Number(row.token), expiresAt: Number(row.expires_at) };
}

function toStatus(row: StatusRow): ThreadStatusRecord {
  const record: ThreadStatusRecord = {
    threadId: row.thread_id,
    state: row.state,
    checkpointId: row.checkpoint_id,
    updatedAt: Number(row.updated_at),
    attempts: Number(row.attempts),
  };
  if (row.error !== null) record.error = row.error;
  if (row.interrupts !== null) record.interrupts = JSON.parse(row.interrupts) as Record<string, unknown>;
  if (row.attempted_at !== null) record.attemptedAt = Number(row.attempted_at);
  return record;
}

function checkFence(fence: LeaseFence, operation: string): void {
  if (!Number.isSafeInteger(fence.token)) {
    throw new InvalidConfigError("fence", `SqliteStore.${operation}(): the lease token must be a safe integer, got ${String(fence.token)}.`);
  }
}

/** Which of core's id rules a field of a store call falls under. */
function ruleFor(field: string): IdentifierRule {
  if (field === "thread_id") return ID_RULES.threadId;
  if (field === "checkpoint_ns") return ID_RULES.checkpointNs;
  if (field === "task id") return ID_RULES.taskId;
  if (field === "channel") return ID_RULES.channel;
  return ID_RULES.checkpointId;
}

/**
 * Core's id rule (see `ID_LIMITS` in `@resumable/core`), for callers who use the store directly; the
 * saver checks the same before any store call. SQLite stores text as UTF-8, where a lone surrogate has
 * no encoding (better-sqlite3 would store U+FFFD, so two different ids could collide).
 */
function checkId(value: unknown, field: string, operation: string): void {
  checkIdentifier(value, { ...ruleFor(field), field }, `SqliteStore.${operation}()`);
}

function checkNamespace(value: unknown, operation: string): void {
  checkId(value, "checkpoint_ns", operation);
}

function checkScope(scope: ThreadScope, operation: string): void {
  checkId(scope.threadId, "thread_id", operation);
  checkNamespace(scope.checkpointNs, operation);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && code.startsWith("SQLITE_BUSY");
}
