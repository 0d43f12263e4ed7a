/**
 * The PostgreSQL {@link CheckpointStore}: four tables in one schema, one statement per write.
 *
 * @module
 */
import {
  InvalidConfigError,
  LeaseLostError,
  THREAD_STATES,
  StoreClosedError,
  StoreNotSetUpError,
  type BlobRecord,
  type CheckpointRecord,
  type CheckpointStore,
  type ChunkRecord,
  type ChunkRef,
  type DeleteRecordsRequest,
  type ThreadRecords,
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
  type ThreadScope,
  type WriteRecord,
} from "@resumable/core";
import { createHash } from "node:crypto";

import { checkId, quoteIdentifier, translateError } from "./errors.js";
import { ID_RULES, checkIdentifier, threadTtlSettings } from "@resumable/core";
import { ADVISORY_LOCK_CLASS, LATEST_VERSION, MIGRATIONS, TABLES } from "./migrations.js";
import { DEFAULT_TIMEOUTS, createPool, type PostgresPool, type PostgresPoolOptions, type PostgresQueryable } from "./pool.js";

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /** Schema holding the tables; created by `setup()` when missing. Default `"public"`. */
  schema?: string;
  /**
   * Split values larger than this many bytes into chunks of this size, stored in their own table
   * (declared as the store's `capabilities.maxItemBytes`). Default: no splitting. A bytea value
   * holds up to 1 GB, and every put travels as one message, which PostgreSQL caps at 1 GB too, so
   * splitting buys little here; it exists for pools behind proxies with smaller message limits.
   */
  chunkBytes?: number;
  /** Checkpoints fetched per page by `listCheckpoints`. Default 50. */
  pageSize?: number;
  /**
   * Expire a thread this many seconds after its last write (`putCheckpoint`, `putWrites`), as a whole:
   * its expiry is one row, moved forward inside each write's own statement, and reads treat an expired
   * thread as gone from that moment on (every namespace, its status included). Its rows are deleted by
   * {@link PostgresStore.deleteExpiredThreads}, a thread per statement. A write to an expired thread
   * deletes it first, so the new run starts from nothing. Expiry is judged by the server's clock.
   * Default: never. Every process that shares the schema should pass the same value.
   */
  ttlSeconds?: number;
  /**
   * With `ttlSeconds`: `getCheckpoint` and `listCheckpoints` move the expiry of each live thread they
   * return forward too (one `UPDATE` after the read). Default `false`: only writes do.
   */
  refreshOnRead?: boolean;
  /**
   * Run the checkpoint reads (every `getTuple`), and writes of a few rows, as named prepared statements, so that the server
   * parses and plans each once per connection rather than at every call (default `true`). Turn it off
   * behind a pooler that does not keep prepared statements across transactions (PgBouncer before
   * 1.21 in transaction mode, or with `max_prepared_statements = 0`), or with a pool whose `query`
   * takes only `(text, values)` and not `pg`'s `{ name, text, values }`.
   */
  preparedStatements?: boolean;
}

/** Options of {@link PostgresStore.connect}: store options plus `pg.Pool` settings. */
export interface PostgresConnectOptions extends PostgresStoreOptions {
  /** Passed to `new pg.Pool(...)` (with the connection string). */
  pool?: PostgresPoolOptions;
  /**
   * The server's `lock_timeout` on the pool's connections, in milliseconds (default 10000; 0 waits
   * forever). A write blocked by another transaction's lock longer than this is cancelled by the
   * server and fails with `StoreTimeoutError` (`outcome: "not-applied"`): nothing was stored.
   */
  lockTimeoutMs?: number;
  /**
   * The server's `statement_timeout`, in milliseconds (default 60000; 0 means no limit): one
   * statement running longer is cancelled by the server, with the same error.
   */
  statementTimeoutMs?: number;
}

const DEFAULT_CHUNK_BYTES = Number.POSITIVE_INFINITY;
const STORE_NAME = "PostgresStore";

/** `pg`'s query config form, which every pg-compatible pool takes (see `preparedStatements`). */
interface NamedQueryable {
  query<R>(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: R[] }>;
}

/** The name of a prepared statement: its text's hash, so one name never stands for two texts. */
function statementName(sql: string): string {
  let name = STATEMENT_NAMES.get(sql);
  if (name === undefined) {
    name = `resumable_${createHash("sha1").update(sql).digest("hex").slice(0, 24)}`;
    // The texts named are the few of checkpoint reads and those of writes of a few rows (per schema);
    // the bound is a safeguard.
    if (STATEMENT_NAMES.size < 1024) STATEMENT_NAMES.set(sql, name);
  }
  return name;
}

/** Names already computed, by statement text: a read does not hash its few kilobytes of SQL again. */
const STATEMENT_NAMES = new Map<string, string>();

/** Collects query parameters and hands out their `$n` placeholders. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** Write statements of at most this many rows (chunk parts, blobs, writes) run prepared; see writeStatementName. */
const NAMED_WRITE_ROWS = 6;

/** Above this many parameters a batch is sent as arrays through `unnest` (PostgreSQL allows 65535). */
const MAX_INLINE_PARAMS = 30_000;

/**
 * The row source of an `INSERT ... (columns)`: `VALUES (...), (...)` with one parameter per cell (bytea
 * travels as binary), or, for batches too large for the parameter limit, one array parameter per column
 * expanded by `unnest`. `fixed` are placeholders shared by every row (the thread id...).
 */
function rowSource(p: Params, fixed: string[], types: string[], rows: unknown[][]): string {
  if (p.values.length + rows.length * types.length <= MAX_INLINE_PARAMS) {
    return `VALUES ${rows.map((row) => `(${[...fixed, ...row.map((cell, i) => `${p.add(cell)}::${types[i]}`)].join(", ")})`).join(", ")}`;
  }
  const arrays = types.map((type, i) => `${p.add(rows.map((row) => row[i]))}::${type}[]`);
  return `SELECT ${[...fixed, "u.*"].join(", ")} FROM unnest(${arrays.join(", ")}) AS u`;
}

const VALUE_TYPES = ["text", "bytea", "jsonb", "jsonb"];
/** `type, data, chunk, refs` cells of a serialized value (refs: the shared pieces it is made of, as a JSON array). */
const valueCells = (value: SerializedValue): unknown[] => [
  value.type,
  buffer(value.data),
  value.chunkRef ? JSON.stringify(value.chunkRef) : null,
  value.refs && value.refs.length > 0 ? JSON.stringify(value.refs) : null,
];

/** A row of the combined result of the read queries: one checkpoint, blob or write per row. */
interface ReadRow {
  kind: "c" | "b" | "w" | "p";
  pos: string | number;
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  channel: string | null;
  /** The blob's version, or the write's task id. */
  key: string | null;
  idx: number | null;
  /** The blob's base version, or the write's task path. */
  extra: string | null;
  type: string | null;
  data: Buffer | null;
  chunk: ChunkRef | null;
  metadata_type: string | null;
  metadata_data: Buffer | null;
  metadata_chunk: ChunkRef | null;
  metadata_json: Record<string, unknown> | null;
  metadata_json_raw: Buffer | null;
  channel_versions: Record<string, string> | null;
  delta_roots: Record<string, string> | null;
  refs: string[] | null;
}

/**
 * A {@link CheckpointStore} on PostgreSQL, through a `pg` pool (or anything with the same `query`).
 *
 * - `putCheckpoint` and `putWrites` are each one statement (data-modifying CTEs): one round trip,
 *   atomic without an explicit transaction.
 * - `getCheckpoint` is one query returning the checkpoint, the blobs it references and its writes;
 *   `getHistory` is one recursive query whatever the depth; `listCheckpoints` pages by keyset.
 * - Metadata filters use jsonb containment plus per-key equality, within the thread's primary-key range.
 *
 * @example
 * ```ts
 * const store = await PostgresStore.connect("postgres://localhost/app", { schema: "agents" });
 * await store.setup();
 * const checkpointer = new ResumableSaver(store);
 * ```
 */
export class PostgresStore implements CheckpointStore {
  readonly capabilities: Partial<StoreCapabilities>;
  /** The pool queries go through. */
  readonly pool: PostgresPool;
  /** The schema name, unquoted. */
  readonly schema: string;
  private ownsPool = false;
  private readonly pageSize: number;
  private readonly t: { checkpoints: string; blobs: string; writes: string; chunks: string; migrations: string; leases: string; threads: string; expiry: string };
  /** `ttlSeconds` in milliseconds; 0 without a TTL. */
  private readonly ttlMs: number;
  private readonly refreshOnRead: boolean;
  /** Whether reads of one checkpoint go as named prepared statements (see the option). */
  private readonly prepared: boolean;
  private readonly quotedSchema: string;
  private listener: StoreCommandListener | undefined;
  private closed = false;

  /**
   * @param pool A `pg.Pool` (or compatible). It stays open on `close()`: the caller owns it.
   */
  constructor(pool: PostgresPool, options: PostgresStoreOptions = {}) {
    this.pool = pool;
    this.schema = options.schema ?? "public";
    this.quotedSchema = quoteIdentifier(this.schema, "schema");
    const q = this.quotedSchema;
    this.t = {
      checkpoints: `${q}.${TABLES.checkpoints}`,
      blobs: `${q}.${TABLES.blobs}`,
      writes: `${q}.${TABLES.writes}`,
      chunks: `${q}.${TABLES.chunks}`,
      migrations: `${q}.${TABLES.migrations}`,
      leases: `${q}.${TABLES.leases}`,
      threads: `${q}.${TABLES.threads}`,
      expiry: `${q}.${TABLES.expiry}`,
    };
    const ttl = threadTtlSettings(options, "PostgresStore");
    this.ttlMs = ttl.ttlMs;
    this.refreshOnRead = ttl.refreshOnRead;
    if (options.preparedStatements !== undefined && typeof options.preparedStatements !== "boolean") {
      throw new InvalidConfigError("preparedStatements", `PostgresStore: "preparedStatements" must be true or false, got ${String(options.preparedStatements)}.`);
    }
    this.prepared = options.preparedStatements ?? true;
    this.pageSize = Math.max(1, Math.floor(options.pageSize ?? 50));
    this.capabilities = {
      maxItemBytes: options.chunkBytes ?? DEFAULT_CHUNK_BYTES,
      nativeMetadataFilter: true,
      persistent: true,
      commandEvents: true,
      valueRefs: true,
      deltaRanges: true,
      leases: true,
      threadStatus: true,
      retention: true,
    };
  }

  /**
   * Creates a store with its own `pg.Pool` for a connection string; `close()` ends that pool.
   * Does not run migrations: call `setup()` (or {@link PostgresStore.migrate} ahead of deploys).
   */
  static async connect(connectionString: string, options: PostgresConnectOptions = {}): Promise<PostgresStore> {
    const timeouts = {
      lockTimeoutMs: timeoutOption(options.lockTimeoutMs, "lockTimeoutMs", DEFAULT_TIMEOUTS.lockTimeoutMs),
      statementTimeoutMs: timeoutOption(options.statementTimeoutMs, "statementTimeoutMs", DEFAULT_TIMEOUTS.statementTimeoutMs),
    };
    const pool = await createPool(connectionString, options.pool, timeouts);
    const store = new PostgresStore(pool, options);
    store.ownsPool = true;
    return store;
  }

  /**
   * Runs pending migrations against a database and returns the schema version, for deploy scripts:
   * `await PostgresStore.migrate(process.env.DATABASE_URL, { schema: "agents" })`. Safe to run while
   * other processes are also migrating or serving.
   */
  static async migrate(target: string | PostgresPool, options: PostgresConnectOptions = {}): Promise<number> {
    const store = typeof target === "string" ? await PostgresStore.connect(target, options) : new PostgresStore(target, options);
    try {
      await store.setup();
      return LATEST_VERSION;
    } finally {
      await store.close();
    }
  }

  instrument(listener: StoreCommandListener | undefined): void {
    this.listener = listener;
  }

  /**
   * Applies pending migrations in one transaction under `pg_advisory_xact_lock`, so concurrent
   * callers wait for the first and then find nothing left to do. When the schema is already current
   * it only reads the version (no lock, no DDL), so a role without CREATE rights can call it at
   * startup after deploys migrated with {@link PostgresStore.migrate}.
   */
  async setup(): Promise<void> {
    this.check();
    let client;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw translateError(error, "setup", STORE_NAME);
    }
    let failed: unknown;
    let inTransaction = false;
    try {
      if ((await this.schemaVersion(client)) === LATEST_VERSION) return;
      await this.run("BEGIN", "setup", "BEGIN", [], client);
      inTransaction = true;
      await this.run("SELECT pg_advisory_xact_lock", "setup", "SELECT pg_advisory_xact_lock($1, hashtext($2))", [ADVISORY_LOCK_CLASS, this.schema], client);
      // Checked before creating: CREATE ... IF NOT EXISTS still demands CREATE rights when nothing is missing.
      const [{ schema_exists } = { schema_exists: false }] = await this.run<{ schema_exists: boolean }>(
        "SELECT schema",
        "setup",
        "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema_exists",
        [this.schema],
        client,
      );
      if (!schema_exists) await this.run("CREATE SCHEMA", "setup", `CREATE SCHEMA ${this.quotedSchema}`, [], client);
      let current = await this.schemaVersion(client);
      if (current < 0) {
        await this.run(
          "CREATE TABLE migrations",
          "setup",
          `CREATE TABLE ${this.t.migrations} (version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
          [],
          client,
        );
        current = 0;
      }
      for (const migration of MIGRATIONS) {
        if (migration.version <= current) continue;
        for (const statement of migration.statements(this.quotedSchema)) {
          await this.run(`MIGRATE ${migration.version}`, "setup", statement, [], client);
        }
        await this.run(
          "INSERT migrations",
          "setup",
          `INSERT INTO ${this.t.migrations} (version, description) VALUES ($1, $2)`,
          [migration.version, migration.description],
          client,
        );
      }
      await this.run("COMMIT", "setup", "COMMIT", [], client);
    } catch (error) {
      failed = error;
      if (inTransaction) await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release(failed instanceof Error && !(failed instanceof StoreNotSetUpError) ? failed : undefined);
    }
  }

  /**
   * The schema's migration version: -1 when the migrations table does not exist yet. Throws
   * {@link StoreNotSetUpError} for a version newer than this package knows.
   */
  private async schemaVersion(client: PostgresQueryable): Promise<number> {
    const [found] = await this.run<{ exists: boolean }>(
      "SELECT migrations table",
      "setup",
      "SELECT to_regclass($1) IS NOT NULL AS exists",
      [this.t.migrations],
      client,
    );
    if (!found?.exists) return -1;
    const rows = await this.run<{ version: number | null }>("SELECT migrations", "setup", `SELECT max(version) AS version FROM ${this.t.migrations}`, [], client);
    const current = rows[0]?.version ?? 0;
    if (current > LATEST_VERSION) {
      throw new StoreNotSetUpError(
        STORE_NAME,
        `schema "${this.schema}" is at version ${current}, newer than this package knows (${LATEST_VERSION}); upgrade @resumable/postgres`,
      );
    }
    return current;
  }

  /**
   * One statement: chunks, blobs, the status row (a root checkpoint's) and the checkpoint row, as
   * data-modifying CTEs, so one round trip, atomic. With a fence, a `FOR SHARE` read of the lease row
   * comes first and every insert is conditional on it, so a claim's `UPDATE` of that row either waits
   * for this statement or makes it insert nothing.
   */
  async putCheckpoint(request: PutCheckpointRequest): Promise<void> {
    this.check();
    const { record } = request;
    checkScope(record);
    checkId("checkpoint_id", record.checkpointId);
    if (record.parentCheckpointId !== undefined) checkId("parent checkpoint_id", record.parentCheckpointId);
    for (const [channel, version] of Object.entries(record.channelVersions)) {
      checkId(`channel name "${channel}"`, channel);
      checkId(`version of channel "${channel}"`, version);
    }
    const p = new Params();
    const thread = p.add(record.threadId);
    const ns = p.add(record.checkpointNs);
    const ctes: string[] = [];
    const fenced = request.fence !== undefined;
    const ttl = this.ttlMs > 0;
    if (request.fence) ctes.push(this.fenceCte(p, thread, request.fence));
    if (ttl) ctes.push(this.expiryCte(p, thread, fenced));
    const guard = (source: string) => guarded(source, fenced, ttl);
    const chunks = this.chunkValues(p, thread, request.chunks);
    if (chunks) ctes.push(`chunks AS (INSERT INTO ${this.t.chunks} (thread_id, hash, idx, part, data) ${guard(chunks.source)} ON CONFLICT DO NOTHING)`);
    const blobRows = dedupe(request.blobs, (b) => `${b.channel}\u0000${b.version}`, "first").map((blob) => {
      checkId(`channel name "${blob.channel}"`, blob.channel);
      checkId(`version of channel "${blob.channel}"`, blob.version);
      if (blob.baseVersion !== undefined) checkId(`base version of channel "${blob.channel}"`, blob.baseVersion);
      return [blob.channel, blob.version, ...valueCells(blob.value), blob.baseVersion ?? null];
    });
    if (blobRows.length > 0) {
      ctes.push(
        `blobs AS (INSERT INTO ${this.t.blobs} (thread_id, checkpoint_ns, channel, version, value_type, value_data, value_chunk, refs, base_version) ` +
          `${guard(rowSource(p, [thread, ns], ["text", "text", ...VALUE_TYPES, "text"], blobRows))} ON CONFLICT DO NOTHING)`,
      );
    }
    const checkpointId = p.add(record.checkpointId);
    if (request.status) {
      const { status } = request;
      const interrupts = status.interrupts && Object.keys(status.interrupts).length > 0 ? JSON.stringify(status.interrupts) : null;
      // Replaces the record unless it names a later checkpoint. With keepUpdatedAtFrom, a record that keeps
      // its state keeps a recent updated_at: no indexed column then changes, so the update is HOT (no
      // new index entry, the old row version pruned within its page).
      const updatedAt =
        status.keepUpdatedAtFrom === undefined
          ? "EXCLUDED.updated_at"
          : `CASE WHEN th.state = EXCLUDED.state AND th.updated_at >= ${p.add(status.keepUpdatedAtFrom)}::bigint THEN th.updated_at ELSE EXCLUDED.updated_at END`;
      ctes.push(
        `status AS (INSERT INTO ${this.t.threads} AS th (thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at) ` +
          `${guard(`VALUES (${thread}::text, ${p.add(status.state)}::text, ${checkpointId}::text, ${p.add(status.updatedAt)}::bigint, ${p.add(status.error ?? null)}::text, ${p.add(interrupts)}::jsonb, 0, NULL::bigint)`)} ` +
          `ON CONFLICT (thread_id) DO UPDATE SET state = EXCLUDED.state, checkpoint_id = EXCLUDED.checkpoint_id, updated_at = ${updatedAt}, ` +
          `error = EXCLUDED.error, interrupts = EXCLUDED.interrupts, attempts = 0, attempted_at = NULL ` +
          `WHERE th.checkpoint_id <= EXCLUDED.checkpoint_id)`,
      );
    }
    const { json, raw } = storableMetadata(record.metadataJson);
    const insert =
      `INSERT INTO ${this.t.checkpoints} (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, ` +
      `checkpoint_type, checkpoint_data, checkpoint_chunk, metadata_type, metadata_data, metadata_chunk, ` +
      `metadata_json, metadata_json_raw, channel_versions, delta_roots) ` +
      guard(
        `VALUES (${thread}::text, ${ns}::text, ${checkpointId}::text, ` +
          `${p.add(record.parentCheckpointId ?? null)}::text, ${valueParams(p, record.checkpoint)}, ${valueParams(p, record.metadata)}, ` +
          `${p.add(json)}::jsonb, ${p.add(raw)}::bytea, ${p.add(JSON.stringify(record.channelVersions))}::jsonb, ` +
          `${p.add(record.deltaRoots ? JSON.stringify(record.deltaRoots) : null)}::jsonb)`,
      ) +
      ` ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET ` +
      `parent_checkpoint_id = EXCLUDED.parent_checkpoint_id, checkpoint_type = EXCLUDED.checkpoint_type, ` +
      `checkpoint_data = EXCLUDED.checkpoint_data, checkpoint_chunk = EXCLUDED.checkpoint_chunk, ` +
      `metadata_type = EXCLUDED.metadata_type, metadata_data = EXCLUDED.metadata_data, metadata_chunk = EXCLUDED.metadata_chunk, ` +
      `metadata_json = EXCLUDED.metadata_json, metadata_json_raw = EXCLUDED.metadata_json_raw, channel_versions = EXCLUDED.channel_versions, ` +
      `delta_roots = EXCLUDED.delta_roots`;
    const rows = (chunks?.rows ?? 0) + blobRows.length;
    if (!request.fence && !ttl) {
      const sql = (ctes.length > 0 ? `WITH ${ctes.join(", ")} ` : "") + insert;
      await this.run("INSERT checkpoint", "putCheckpoint", sql, p.values, this.pool, this.writeStatementName(sql, rows));
      return;
    }
    ctes.push(`cp AS (${insert} RETURNING 1)`);
    const sql = `WITH ${ctes.join(", ")} ${this.writeResult(thread, fenced)}`;
    await this.guardedWrite(record.threadId, request.fence, "putCheckpoint", "put", "INSERT checkpoint", sql, p.values, this.writeStatementName(sql, rows));
  }

  /**
   * One statement: chunks, then the writes (`ON CONFLICT DO UPDATE` for `"upsert"`, `DO NOTHING` for
   * `"ignore"`), the status patch of a special write, and, with a fence, the lease row read `FOR SHARE`
   * that every part is conditional on.
   */
  async putWrites(request: PutWritesRequest): Promise<void> {
    this.check();
    checkScope(request);
    checkId("checkpoint_id", request.checkpointId);
    if (request.writes.length === 0 && request.chunks.length === 0) return;
    const p = new Params();
    const thread = p.add(request.threadId);
    const ctes: string[] = [];
    const fenced = request.fence !== undefined;
    const ttl = this.ttlMs > 0;
    if (request.fence) ctes.push(this.fenceCte(p, thread, request.fence));
    if (ttl) ctes.push(this.expiryCte(p, thread, fenced));
    const guard = (source: string) => guarded(source, fenced, ttl);
    const chunks = this.chunkValues(p, thread, request.chunks);
    // One statement cannot upsert the same key twice: keep the write the mode says survives.
    const writes = dedupe(request.writes, (w) => `${w.taskId}\u0000${w.idx}`, request.mode === "upsert" ? "last" : "first");
    const rows = writes.map((write) => {
      checkId("task id", write.taskId);
      checkId(`channel name "${write.channel}"`, write.channel);
      checkId("task path", write.taskPath);
      return [write.taskId, write.idx, write.channel, ...valueCells(write.value), write.taskPath];
    });
    if (chunks) ctes.push(`chunks AS (INSERT INTO ${this.t.chunks} (thread_id, hash, idx, part, data) ${guard(chunks.source)} ON CONFLICT DO NOTHING)`);
    if (request.status) ctes.push(`status AS (${this.patchSql(p, thread, request.status, fenced, ttl ? "EXISTS (SELECT 1 FROM exp)" : undefined)})`);
    let main: string | undefined;
    if (rows.length > 0) {
      // Added only here: a parameter no part of the statement uses has no type PostgreSQL can infer.
      const ns = p.add(request.checkpointNs);
      const checkpointId = p.add(request.checkpointId);
      const onConflict =
        request.mode === "upsert"
          ? `ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE SET channel = EXCLUDED.channel, ` +
            `value_type = EXCLUDED.value_type, value_data = EXCLUDED.value_data, value_chunk = EXCLUDED.value_chunk, refs = EXCLUDED.refs, ` +
            `task_path = EXCLUDED.task_path`
          : "ON CONFLICT DO NOTHING";
      main =
        `INSERT INTO ${this.t.writes} (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value_type, value_data, value_chunk, refs, task_path) ` +
        `${guard(rowSource(p, [thread, ns, checkpointId], ["text", "integer", "text", ...VALUE_TYPES, "text"], rows))} ${onConflict}`;
    }
    const statementRows = (chunks?.rows ?? 0) + rows.length;
    if (fenced || ttl) {
      if (main) ctes.push(`w AS (${main})`);
      const sql = `WITH ${ctes.join(", ")} ${this.writeResult(thread, fenced)}`;
      await this.guardedWrite(request.threadId, request.fence, "putWrites", "putWrites", "INSERT writes", sql, p.values, this.writeStatementName(sql, statementRows));
      return;
    }
    if (!main) {
      // Only chunks (and perhaps a status patch): the last CTE becomes the statement.
      const last = ctes.pop()!;
      main = last.slice(last.indexOf("(") + 1, -1);
    }
    const sql = (ctes.length > 0 ? `WITH ${ctes.join(", ")} ` : "") + main;
    await this.run("INSERT writes", "putWrites", sql, p.values, this.pool, this.writeStatementName(sql, statementRows));
  }

  async getCheckpoint(scope: ThreadScope & { checkpointId?: string }): Promise<StoredCheckpoint | undefined> {
    this.check();
    checkScope(scope);
    const p = new Params();
    let where = `thread_id = ${p.add(scope.threadId)} AND checkpoint_ns = ${p.add(scope.checkpointNs)}`;
    if (scope.checkpointId !== undefined) {
      checkId("checkpoint_id", scope.checkpointId);
      where += ` AND checkpoint_id = ${p.add(scope.checkpointId)}`;
    }
    if (this.ttlMs) where += ` AND ${this.live("$1")}`;
    const sql = this.readQuery(where, "1");
    // Four texts at most (by id or newest, with or without the TTL condition): named, each is parsed
    // and planned once per connection.
    const rows = await this.run<ReadRow>("SELECT checkpoint", "getCheckpoint", sql, p.values, this.pool, this.prepared ? statementName(sql) : undefined);
    const found = assemble(rows)[0];
    if (found && this.refreshOnRead) await this.refresh([scope.threadId], "getCheckpoint");
    return found;
  }

  async *listCheckpoints(query: ListCheckpointsQuery): AsyncGenerator<StoredCheckpoint> {
    this.check();
    const p = new Params();
    const conditions: string[] = [];
    if (query.threadId !== undefined) {
      checkId("thread_id", query.threadId);
      conditions.push(`thread_id = ${p.add(query.threadId)}`);
    }
    if (query.checkpointNs !== undefined) {
      checkId("checkpoint_ns", query.checkpointNs);
      conditions.push(`checkpoint_ns = ${p.add(query.checkpointNs)}`);
    }
    if (query.checkpointId !== undefined) {
      checkId("checkpoint_id", query.checkpointId);
      conditions.push(`checkpoint_id = ${p.add(query.checkpointId)}`);
    }
    if (query.before !== undefined) {
      checkId("before.checkpoint_id", query.before);
      conditions.push(`checkpoint_id < ${p.add(query.before)}`);
    }
    const filter = query.filter ? Object.entries(query.filter).filter(([, value]) => value !== undefined) : [];
    if (filter.length > 0) {
      // Containment (which an index of the user's own can serve); per-key equality makes it exact ({a: [1]} contains
      // in {a: [1, 2]} but does not equal it). Both sides are sanitized the same way (see below).
      const sanitized = filter.map(([key, value]) => [sanitizeJson(key) as string, sanitizeJson(value)] as const);
      conditions.push(`metadata_json @> ${p.add(JSON.stringify(Object.fromEntries(sanitized)))}::jsonb`);
      for (const [key, value] of sanitized) {
        conditions.push(`metadata_json -> ${p.add(key)} = ${p.add(JSON.stringify(value))}::jsonb`);
      }
    }
    if (this.ttlMs) conditions.push(this.live(`${this.t.checkpoints}.thread_id`));
    let remaining = query.limit ?? Number.POSITIVE_INFINITY;
    let cursor: { threadId: string; checkpointNs: string; checkpointId: string } | undefined;
    while (remaining > 0) {
      const pageParams = new Params();
      pageParams.values.push(...p.values);
      const where = [...conditions];
      if (cursor) {
        where.push(
          `(thread_id, checkpoint_ns, checkpoint_id) < (${pageParams.add(cursor.threadId)}, ${pageParams.add(cursor.checkpointNs)}, ${pageParams.add(cursor.checkpointId)})`,
        );
      }
      const size = Math.min(this.pageSize, remaining);
      const rows = await this.run<ReadRow>(
        "SELECT checkpoints",
        "listCheckpoints",
        this.readQuery(where.length > 0 ? where.join(" AND ") : "true", String(size)),
        pageParams.values,
      );
      const page = assemble(rows);
      if (this.refreshOnRead && page.length > 0) await this.refresh([...new Set(page.map((stored) => stored.record.threadId))], "listCheckpoints");
      for (const stored of page) yield stored;
      remaining -= page.length;
      if (page.length < size) return;
      const last = page[page.length - 1]!.record;
      cursor = { threadId: last.threadId, checkpointNs: last.checkpointNs, checkpointId: last.checkpointId };
    }
  }

  async getHistory(query: HistoryQuery): Promise<HistoryResult> {
    this.check();
    checkScope(query);
    checkId("checkpoint_id", query.checkpointId);
    for (const channel of query.channels) checkId(`channel name "${channel}"`, channel);
    const p = new Params();
    const thread = p.add(query.threadId);
    const ns = p.add(query.checkpointNs);
    const target = p.add(query.checkpointId);
    const channels = p.add(query.channels);
    const { checkpoints: cp, blobs, writes } = this.t;
    // Walks the parent chain in the database and stops once every requested channel has met an
    // ancestor holding a non-empty blob for it (its seed): one query, whatever the depth. The seed test
    // is a scalar subquery, one primary-key probe per ancestor and channel: written as NOT EXISTS,
    // PostgreSQL made it an anti join that read every blob of the thread at every ancestor (a 1000-turn
    // thread without a snapshot: 480 of the read's 505 ms).
    const unseeded = (list: string) =>
      `ARRAY(SELECT ch FROM unnest(${list}) AS ch WHERE (SELECT true FROM ${blobs} b ` +
      `WHERE b.thread_id = p.thread_id AND b.checkpoint_ns = p.checkpoint_ns AND b.channel = ch ` +
      `AND b.version = p.channel_versions ->> ch AND b.value_type <> 'empty') IS NULL)`;
    const range = (c: string) =>
      `b.version COLLATE "C" BETWEEN COALESCE(${c}.delta_roots ->> b.channel, ${c}.channel_versions ->> b.channel) AND ${c}.channel_versions ->> b.channel`;
    const sql =
      `WITH RECURSIVE chain AS (` +
      `SELECT p.thread_id, p.checkpoint_id, p.parent_checkpoint_id, p.channel_versions, p.delta_roots, 1 AS depth, ${unseeded(`${channels}::text[]`)} AS remaining ` +
      `FROM ${cp} t JOIN ${cp} p ON p.thread_id = t.thread_id AND p.checkpoint_ns = t.checkpoint_ns AND p.checkpoint_id = t.parent_checkpoint_id ` +
      `WHERE t.thread_id = ${thread} AND t.checkpoint_ns = ${ns} AND t.checkpoint_id = ${target} ${this.ttlMs ? `AND ${this.live(thread)} ` : ""}` +
      `UNION ALL ` +
      `SELECT p.thread_id, p.checkpoint_id, p.parent_checkpoint_id, p.channel_versions, p.delta_roots, c.depth + 1, ${unseeded("c.remaining")} ` +
      `FROM chain c JOIN ${cp} p ON p.thread_id = c.thread_id AND p.checkpoint_ns = ${ns} AND p.checkpoint_id = c.parent_checkpoint_id ` +
      `WHERE cardinality(c.remaining) > 0), ` +
      `bl AS (SELECT c.depth, c.checkpoint_id, b.channel, b.version, b.base_version, b.value_type, b.value_data, b.value_chunk, b.refs ` +
      `FROM chain c JOIN ${blobs} b ON b.thread_id = ${thread} AND b.checkpoint_ns = ${ns} ` +
      `AND b.channel = ANY(${channels}::text[]) AND ${range("c")}), ` +
      // Each ancestor's writes by the primary key (OFFSET 0 keeps the subquery a per-row probe): as a
      // join, on tables not yet analyzed, PostgreSQL compared every write with every ancestor.
      `wr AS (SELECT c.depth, c.checkpoint_id, w.channel, w.task_id, w.idx, w.task_path, w.value_type, w.value_data, w.value_chunk, w.refs ` +
      `FROM chain c CROSS JOIN LATERAL (SELECT * FROM ${writes} w WHERE w.thread_id = ${thread} AND w.checkpoint_ns = ${ns} ` +
      `AND w.checkpoint_id = c.checkpoint_id AND w.channel = ANY(${channels}::text[]) OFFSET 0) w), ` +
      `${piecesCte(this.t.chunks, thread)} ` +
      `SELECT 'c' AS kind, c.depth AS pos, c.checkpoint_id, c.parent_checkpoint_id, NULL::text AS channel, NULL::text AS key, ` +
      `NULL::integer AS idx, NULL::text AS extra, NULL::text AS type, NULL::bytea AS data, NULL::jsonb AS chunk, NULL::jsonb AS refs, ` +
      `c.channel_versions, c.delta_roots FROM chain c ` +
      `UNION ALL ` +
      `SELECT 'b', depth, checkpoint_id, NULL, channel, version, NULL, base_version, value_type, value_data, value_chunk, refs, NULL, NULL FROM bl ` +
      `UNION ALL ` +
      `SELECT 'w', depth, checkpoint_id, NULL, channel, task_id, idx, task_path, value_type, value_data, value_chunk, refs, NULL, NULL FROM wr ` +
      `UNION ALL ` +
      `SELECT 'p', NULL, NULL, NULL, NULL, hash, idx, part::text, NULL, data, NULL, NULL, NULL, NULL FROM pc`;
    const rows = await this.run<ReadRow>("SELECT history", "getHistory", sql, p.values);
    const byId = new Map<string, HistoryAncestor & { depth: number }>();
    const parts: ChunkPart[] = [];
    for (const row of rows) {
      if (row.kind === "p") parts.push(toPart(row));
      if (row.kind !== "c") continue;
      const ancestor: HistoryAncestor & { depth: number } = {
        depth: Number(row.pos),
        checkpointId: row.checkpoint_id,
        parentCheckpointId: row.parent_checkpoint_id ?? undefined,
        channelVersions: row.channel_versions ?? {},
        blobs: [],
        writes: [],
      };
      if (row.delta_roots) ancestor.deltaRoots = row.delta_roots;
      byId.set(row.checkpoint_id, ancestor);
    }
    for (const row of rows) {
      const ancestor = row.checkpoint_id === null ? undefined : byId.get(row.checkpoint_id);
      if (!ancestor) continue;
      if (row.kind === "b") ancestor.blobs.push(toBlob(row));
      else if (row.kind === "w") ancestor.writes.push(toWrite(row));
    }
    const ancestors = [...byId.values()].sort((a, b) => a.depth - b.depth).map(({ depth: _depth, ...ancestor }) => ancestor);
    return { ancestors, chunks: joinParts(parts) };
  }

  async getChunks(threadId: string, hashes: string[]): Promise<ChunkRecord[]> {
    this.check();
    checkId("thread_id", threadId);
    if (hashes.length === 0) return [];
    for (const hash of hashes) checkId("chunk hash", hash);
    const rows = await this.run<{ hash: string; idx: number; part: number; data: Buffer }>(
      "SELECT chunks",
      "getChunks",
      `SELECT hash, idx, part, data FROM ${this.t.chunks} WHERE thread_id = $1 AND hash = ANY($2::text[])${this.ttlMs ? ` AND ${this.live("$1")}` : ""}`,
      [threadId, [...new Set(hashes)]],
    );
    return joinParts(rows.map((row) => ({ hash: row.hash, index: row.idx, part: row.part, data: bytes(row.data) })));
  }

  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>): Promise<BlobRecord[]> {
    this.check();
    checkScope(scope);
    if (keys.length === 0) return [];
    for (const key of keys) {
      checkId(`channel name "${key.channel}"`, key.channel);
      checkId(`version of channel "${key.channel}"`, key.version);
    }
    const rows = await this.run<ReadRow>(
      "SELECT blobs",
      "getBlobs",
      `SELECT b.channel, b.version AS key, b.base_version AS extra, b.value_type AS type, b.value_data AS data, b.value_chunk AS chunk ` +
        `FROM ${this.t.blobs} b JOIN unnest($3::text[], $4::text[]) AS k(channel, version) ON b.channel = k.channel AND b.version = k.version ` +
        `WHERE b.thread_id = $1 AND b.checkpoint_ns = $2${this.ttlMs ? ` AND ${this.live("$1")}` : ""}`,
      [scope.threadId, scope.checkpointNs, keys.map((k) => k.channel), keys.map((k) => k.version)],
    );
    return rows.map(toBlob);
  }

  /**
   * Deletes the thread's rows from every table in one statement, hence one transaction; its lease row
   * stays, so that its fencing token keeps growing if the thread is created again.
   */
  async deleteThread(threadId: string): Promise<void> {
    this.check();
    checkId("thread_id", threadId);
    await this.run(
      "DELETE thread",
      "deleteThread",
      `WITH w AS (DELETE FROM ${this.t.writes} WHERE thread_id = $1), b AS (DELETE FROM ${this.t.blobs} WHERE thread_id = $1), ` +
        `ch AS (DELETE FROM ${this.t.chunks} WHERE thread_id = $1), st AS (DELETE FROM ${this.t.threads} WHERE thread_id = $1) ` +
        (this.ttlMs ? `, ex AS (DELETE FROM ${this.t.expiry} WHERE thread_id = $1) ` : "") +
        `DELETE FROM ${this.t.checkpoints} WHERE thread_id = $1`,
      [threadId],
    );
  }

  /**
   * Every record of the thread by key, for retention: one statement (one snapshot, one round trip),
   * whatever the thread's length; blobs, writes and chunks come as small JSON arrays without their
   * bytes. An expired thread (`ttlSeconds`) has none.
   */
  async listThreadRecords(threadId: string): Promise<ThreadRecords> {
    this.check();
    checkId("thread_id", threadId);
    const { checkpoints, blobs, writes, chunks } = this.t;
    const live = this.ttlMs ? ` AND ${this.live("$1")}` : "";
    const rows = await this.run<ReadRow & { k: unknown[] | null }>(
      "SELECT thread records",
      "listThreadRecords",
      `SELECT 'c' AS kind, 0 AS pos, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type AS type, ` +
        `checkpoint_data AS data, checkpoint_chunk AS chunk, metadata_type, metadata_data, metadata_chunk, metadata_json, metadata_json_raw, ` +
        `channel_versions, delta_roots, NULL::jsonb AS k FROM ${checkpoints} WHERE thread_id = $1${live} ` +
        `UNION ALL SELECT 'b', 0, thread_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ` +
        `jsonb_build_array(checkpoint_ns, channel, version, value_type = 'empty', base_version, refs, value_chunk ->> 'hash', octet_length(value_data)) ` +
        `FROM ${blobs} WHERE thread_id = $1${live} ` +
        `UNION ALL SELECT 'w', 0, thread_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ` +
        `jsonb_build_array(checkpoint_ns, checkpoint_id, task_id, idx, channel, refs, value_chunk ->> 'hash', octet_length(value_data)) ` +
        `FROM ${writes} WHERE thread_id = $1${live} ` +
        `UNION ALL SELECT 'p', 0, thread_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ` +
        // One entry per (hash, index), however many rows a chunk is stored in.
        `jsonb_build_array(hash, idx, sum(octet_length(data))) FROM ${chunks} WHERE thread_id = $1${live} GROUP BY thread_id, hash, idx`,
      [threadId],
    );
    const out: ThreadRecords = { checkpoints: [], blobs: [], writes: [], chunks: [] };
    for (const row of rows) {
      if (row.kind === "c") {
        out.checkpoints.push(assemble([{ ...row, pos: 0 }])[0]!.record);
        continue;
      }
      const k = row.k!;
      if (row.kind === "b") {
        const [checkpointNs, channel, version, empty, baseVersion, refs, chunkHash, bytes] = k as [string, string, string, boolean, string | null, string[] | null, string | null, number];
        out.blobs.push({
          checkpointNs,
          channel,
          version,
          empty,
          bytes,
          ...(baseVersion !== null ? { baseVersion } : {}),
          ...(refs !== null ? { refs } : {}),
          ...(chunkHash !== null ? { chunkHash } : {}),
        });
      } else if (row.kind === "w") {
        const [checkpointNs, checkpointId, taskId, idx, channel, refs, chunkHash, bytes] = k as [string, string, string, number, string, string[] | null, string | null, number];
        out.writes.push({
          checkpointNs,
          checkpointId,
          taskId,
          idx,
          channel,
          bytes,
          ...(refs !== null ? { refs } : {}),
          ...(chunkHash !== null ? { chunkHash } : {}),
        });
      } else {
        const [hash, index, bytes] = k as [string, number, number];
        out.chunks.push({ hash, index, bytes });
      }
    }
    return out;
  }

  /**
   * Removes the listed records of one thread in one statement (data-modifying CTEs, one per table),
   * hence one transaction; with a fence, every removal is conditional on the lease row read
   * `FOR SHARE`, as a fenced write is.
   */
  async deleteRecords(request: DeleteRecordsRequest): Promise<void> {
    this.check();
    checkId("thread_id", request.threadId);
    for (const c of request.checkpoints) {
      checkId("checkpoint_ns", c.checkpointNs);
      checkId("checkpoint_id", c.checkpointId);
    }
    for (const b of request.blobs) {
      checkId("checkpoint_ns", b.checkpointNs);
      checkId(`channel name "${b.channel}"`, b.channel);
      checkId(`version of channel "${b.channel}"`, b.version);
    }
    for (const hash of request.chunks) checkId("chunk hash", hash);
    const p = new Params();
    const thread = p.add(request.threadId);
    const fenced = request.fence !== undefined;
    const ctes: string[] = [];
    if (request.fence) ctes.push(this.fenceCte(p, thread, request.fence));
    const guard = fenced ? " AND EXISTS (SELECT 1 FROM fence)" : "";
    if (request.checkpoints.length > 0) {
      const keys = `(SELECT * FROM unnest(${p.add(request.checkpoints.map((c) => c.checkpointNs))}::text[], ${p.add(request.checkpoints.map((c) => c.checkpointId))}::text[]))`;
      ctes.push(`c AS (DELETE FROM ${this.t.checkpoints} WHERE thread_id = ${thread} AND (checkpoint_ns, checkpoint_id) IN ${keys}${guard})`);
      ctes.push(`w AS (DELETE FROM ${this.t.writes} WHERE thread_id = ${thread} AND (checkpoint_ns, checkpoint_id) IN ${keys}${guard})`);
    }
    if (request.blobs.length > 0) {
      const keys =
        `(SELECT * FROM unnest(${p.add(request.blobs.map((b) => b.checkpointNs))}::text[], ${p.add(request.blobs.map((b) => b.channel))}::text[], ` +
        `${p.add(request.blobs.map((b) => b.version))}::text[]))`;
      ctes.push(`b AS (DELETE FROM ${this.t.blobs} WHERE thread_id = ${thread} AND (checkpoint_ns, channel, version) IN ${keys}${guard})`);
    }
    if (request.chunks.length > 0) {
      ctes.push(`ch AS (DELETE FROM ${this.t.chunks} WHERE thread_id = ${thread} AND hash = ANY(${p.add(request.chunks)}::text[])${guard})`);
    }
    if (request.status === null) {
      ctes.push(`st AS (DELETE FROM ${this.t.threads} WHERE thread_id = ${thread}${guard})`);
    } else if (request.status) {
      const { checkpointId, write } = request.status;
      checkId("checkpoint_id", checkpointId);
      const interrupts = write.interrupts && Object.keys(write.interrupts).length > 0 ? JSON.stringify(write.interrupts) : null;
      const row =
        `SELECT ${thread}::text, ${p.add(write.state)}::text, ${p.add(checkpointId)}::text, ${p.add(write.updatedAt)}::bigint, ` +
        `${p.add(write.error ?? null)}::text, ${p.add(interrupts)}::jsonb, 0, NULL::bigint` +
        (fenced ? ` WHERE EXISTS (SELECT 1 FROM fence)` : "");
      ctes.push(
        `st AS (INSERT INTO ${this.t.threads} AS th (thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at) ${row} ` +
          `ON CONFLICT (thread_id) DO UPDATE SET state = EXCLUDED.state, checkpoint_id = EXCLUDED.checkpoint_id, updated_at = EXCLUDED.updated_at, ` +
          `error = EXCLUDED.error, interrupts = EXCLUDED.interrupts, attempts = 0, attempted_at = NULL)`,
      );
    }
    if (ctes.length === (fenced ? 1 : 0)) return;
    const sql = `WITH ${ctes.join(", ")} ${fenced ? this.fenceResult(thread) : "SELECT 1 AS held"}`;
    const rows = await this.run<FenceRow>("DELETE records", "deleteRecords", sql, p.values);
    if (request.fence) this.checkFenceResult(request.threadId, request.fence, rows, "deleteRecords");
  }

  /**
   * Deletes threads whose `ttlSeconds` passed since their last write (at most `limit` per call, 100 by
   * default, oldest expiry first) and returns how many. An expired thread is already invisible to
   * reads, as a whole; this reclaims its rows: each thread in one statement, hence one transaction,
   * which deletes what {@link deleteThread} deletes (the lease row stays) only if the thread is still
   * expired when its expiry row is locked, so a crash leaves a thread whole or gone and a thread
   * written meanwhile is kept. Expired rows are read through an index on the expiry: the cost follows
   * what expired, not the number of threads. Several processes may sweep at once. Without
   * `ttlSeconds` it returns 0. Run it from a timer, for example:
   *
   * ```ts
   * setInterval(() => store.deleteExpiredThreads({ limit: 1000 }).catch(console.error), 60_000).unref();
   * ```
   */
  async deleteExpiredThreads(options: { limit?: number } = {}): Promise<number> {
    this.check();
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) {
      throw new InvalidConfigError("limit", `PostgresStore.deleteExpiredThreads(): "limit" must be an integer from 1 to 100000, got ${String(limit)}.`);
    }
    if (!this.ttlMs) return 0;
    const expired = await this.run<{ thread_id: string }>(
      "SELECT expired threads",
      "deleteExpiredThreads",
      `SELECT thread_id FROM ${this.t.expiry} WHERE expires_at <= ${NOW_MS} ORDER BY expires_at LIMIT $1`,
      [limit],
    );
    let deleted = 0;
    for (const { thread_id: threadId } of expired) deleted += await this.deleteIfExpired(threadId, "deleteExpiredThreads");
    return deleted;
  }

  /**
   * One upsert: takes a free lease (never claimed, released, or expired by the server's clock) or the
   * same worker's, raising the token; `ON CONFLICT` locks the row, so of concurrent claims one wins.
   */
  async claimLease(claim: LeaseClaim): Promise<Lease | undefined> {
    this.check();
    checkId("thread_id", claim.threadId);
    checkIdentifier(claim.workerId, ID_RULES.workerId, "PostgresStore.claimLease()");
    const rows = await this.run<LeaseRow>(
      "CLAIM lease",
      "claimLease",
      `INSERT INTO ${this.t.leases} AS l (thread_id, token, worker_id, expires_at, released) VALUES ($1, 1, $2, ${NOW_MS} + $3::bigint, false) ` +
        `ON CONFLICT (thread_id) DO UPDATE SET token = l.token + 1, worker_id = EXCLUDED.worker_id, expires_at = EXCLUDED.expires_at, released = false ` +
        `WHERE l.released OR l.expires_at <= ${NOW_MS} OR l.worker_id = EXCLUDED.worker_id RETURNING token, worker_id, expires_at`,
      [claim.threadId, claim.workerId, claim.ttlMs],
    );
    return rows[0] ? toLease(claim.threadId, rows[0]) : undefined;
  }

  async renewLease(lease: Lease, ttlMs: number): Promise<Lease> {
    this.check();
    checkId("thread_id", lease.threadId);
    const rows = await this.run<LeaseRow & { current_token: string | null; current_worker: string | null; current_released: boolean | null }>(
      "RENEW lease",
      "renewLease",
      `WITH u AS (UPDATE ${this.t.leases} SET expires_at = ${NOW_MS} + $3::bigint WHERE thread_id = $1 AND token = $2 AND NOT released ` +
        `RETURNING token, worker_id, expires_at) ` +
        `SELECT u.token, u.worker_id, u.expires_at, l.token AS current_token, l.worker_id AS current_worker, l.released AS current_released ` +
        `FROM (SELECT 1) AS one LEFT JOIN u ON true LEFT JOIN ${this.t.leases} l ON l.thread_id = $1`,
      [lease.threadId, lease.token, ttlMs],
    );
    const row = rows[0];
    if (row?.token != null) return toLease(lease.threadId, row);
    throw leaseLost(lease.threadId, lease, row?.current_token ?? null, row?.current_worker ?? null, row?.current_released ?? null, "renewLease");
  }

  async releaseLease(lease: Lease): Promise<void> {
    this.check();
    checkId("thread_id", lease.threadId);
    await this.run("RELEASE lease", "releaseLease", `UPDATE ${this.t.leases} SET released = true WHERE thread_id = $1 AND token = $2`, [lease.threadId, lease.token]);
  }

  async getLease(threadId: string): Promise<LeaseState | undefined> {
    this.check();
    checkId("thread_id", threadId);
    const rows = await this.run<LeaseRow & { released: boolean }>(
      "SELECT lease",
      "getLease",
      `SELECT token, worker_id, expires_at, released FROM ${this.t.leases} WHERE thread_id = $1`,
      [threadId],
    );
    return rows[0] ? { ...toLease(threadId, rows[0]), released: rows[0].released } : undefined;
  }

  async getThreadStatus(threadId: string): Promise<ThreadStatusRecord | undefined> {
    this.check();
    checkId("thread_id", threadId);
    const rows = await this.run<StatusRow>(
      "SELECT status",
      "getThreadStatus",
      `SELECT ${STATUS_COLUMNS} FROM ${this.t.threads} WHERE thread_id = $1${this.ttlMs ? ` AND ${this.live("$1")}` : ""}`,
      [threadId],
    );
    return rows[0] ? toStatus(rows[0]) : undefined;
  }

  /**
   * One query: a `LIMIT`ed range of the `(state, updated_at, thread_id)` index per state (a row
   * comparison after the cursor), merged; the cost follows the page, never the table.
   */
  async listThreads(query: ListThreadsQuery): Promise<ThreadStatusRecord[]> {
    this.check();
    const states = [...new Set(query.states ?? THREAD_STATES)];
    if (states.length === 0) throw new InvalidConfigError("states", `PostgresStore.listThreads(): "states" is empty.`);
    if (!Number.isInteger(query.limit) || query.limit < 1) {
      throw new InvalidConfigError("limit", `PostgresStore.listThreads(): "limit" must be a positive integer, got ${String(query.limit)}.`);
    }
    const rows = await this.run<StatusRow>("SELECT threads", "listThreads", ...this.listThreadsQuery(states, query));
    return rows.map(toStatus);
  }

  /** The statement {@link listThreads} runs, with its parameters (exposed for plan tests). */
  listThreadsQuery(states: ThreadState[], query: Omit<ListThreadsQuery, "states">): [string, unknown[]] {
    const p = new Params();
    const limit = p.add(query.limit);
    const after = query.after ? [p.add(query.after.updatedAt), p.add(query.after.threadId)] : undefined;
    const older = query.olderThan !== undefined ? p.add(query.olderThan) : undefined;
    const ranges = states.map(
      (state) =>
        `(SELECT ${STATUS_COLUMNS} FROM ${this.t.threads} WHERE state = ${p.add(state)}` +
        (after ? ` AND (updated_at, thread_id) > (${after[0]}::bigint, ${after[1]}::text)` : "") +
        (older ? ` AND updated_at < ${older}::bigint` : "") +
        (this.ttlMs ? ` AND ${this.live(`${this.t.threads}.thread_id`)}` : "") +
        ` ORDER BY updated_at, thread_id LIMIT ${limit})`,
    );
    const sql = ranges.length === 1 ? ranges[0]! : `SELECT * FROM (${ranges.join(" UNION ALL ")}) AS r ORDER BY updated_at, thread_id LIMIT ${limit}`;
    return [sql, p.values];
  }

  async patchThreadStatus(request: PatchThreadStatusRequest): Promise<ThreadStatusRecord | undefined> {
    this.check();
    checkId("thread_id", request.threadId);
    checkId("checkpoint_id", request.patch.checkpointId);
    const p = new Params();
    const thread = p.add(request.threadId);
    const ctes: string[] = [];
    if (request.fence) ctes.push(this.fenceCte(p, thread, request.fence));
    // An expired thread's status is gone for readers: there is nothing to patch.
    const live = this.ttlMs ? this.live(thread) : undefined;
    ctes.push(`status AS (${this.patchSql(p, thread, request.patch, request.fence !== undefined, live)} RETURNING ${STATUS_COLUMNS})`);
    const rows = await this.run<FenceRow & Partial<StatusRow>>(
      "UPDATE status",
      "patchThreadStatus",
      `WITH ${ctes.join(", ")} SELECT s.*${request.fence ? `, f.held, f.current_token, f.current_worker, f.current_released` : ""} ` +
        `FROM (SELECT 1) AS one LEFT JOIN status s ON true` +
        (request.fence ? ` CROSS JOIN (${this.fenceResult(thread)}) AS f` : ""),
      p.values,
    );
    if (request.fence) this.checkFenceResult(request.threadId, request.fence, rows, "status change");
    const row = rows[0];
    return row?.thread_id ? toStatus(row as StatusRow) : undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError(STORE_NAME);
  }

  private async run<R>(command: string, operation: string, sql: string, values: unknown[], client: PostgresQueryable = this.pool, name?: string): Promise<R[]> {
    let rows: R[];
    try {
      rows = (name === undefined ? await client.query<R>(sql, values) : await (client as unknown as NamedQueryable).query<R>({ name, text: sql, values })).rows;
    } catch (error) {
      throw translateError(error, operation, STORE_NAME);
    }
    this.listener?.({ command });
    return rows;
  }

  /** The lease row, read `FOR SHARE`: present only when it still carries the fence's token. */
  private fenceCte(p: Params, thread: string, fence: LeaseFence): string {
    if (!Number.isSafeInteger(fence.token)) throw new InvalidConfigError("fence", `PostgresStore: the lease token must be a safe integer, got ${String(fence.token)}.`);
    return `fence AS (SELECT token FROM ${this.t.leases} WHERE thread_id = ${thread} AND token = ${p.add(fence.token)}::bigint AND NOT released FOR SHARE)`;
  }

  /** Whether the fence held, and the lease row as the statement saw it (for the error message). */
  private fenceResult(thread: string, extra = ""): string {
    return (
      `SELECT (SELECT count(*) FROM fence)::int AS held, l.token AS current_token, l.worker_id AS current_worker, l.released AS current_released${extra} ` +
      `FROM (SELECT 1) AS one LEFT JOIN ${this.t.leases} l ON l.thread_id = ${thread}`
    );
  }

  private checkFenceResult(threadId: string, fence: LeaseFence, rows: FenceRow[], operation: string): void {
    const row = rows[0];
    if (row && row.held > 0) return;
    throw leaseLost(threadId, fence, row?.current_token ?? null, row?.current_worker ?? null, row?.current_released ?? null, operation);
  }

  /**
   * With `ttlSeconds`: a condition true unless the thread (an SQL expression) expired, added to every
   * read, so an expired thread is gone as a whole before any sweep ran. A thread without an expiry row
   * (written before the TTL was turned on) is live.
   */
  private live(thread: string): string {
    return `NOT EXISTS (SELECT 1 FROM ${this.t.expiry} x WHERE x.thread_id = ${thread} AND x.expires_at <= ${NOW_MS})`;
  }

  /**
   * The `exp` CTE of a write: moves a live thread's expiry to now + TTL, or creates it (after the
   * fence, when there is one). It returns no row for an expired thread, and every part of the write is
   * conditional on it (see {@link guarded}), so such a write stores nothing and {@link guardedWrite}
   * deletes the thread and runs it again.
   */
  private expiryCte(p: Params, thread: string, fenced: boolean): string {
    const expires = `${NOW_MS} + ${p.add(this.ttlMs)}::bigint`;
    return (
      `exp AS (INSERT INTO ${this.t.expiry} AS x (thread_id, expires_at) ` +
      (fenced ? `SELECT ${thread}::text, ${expires} WHERE EXISTS (SELECT 1 FROM fence)` : `VALUES (${thread}::text, ${expires})`) +
      ` ON CONFLICT (thread_id) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE x.expires_at > ${NOW_MS} RETURNING 1)`
    );
  }

  /** The final SELECT of a fenced or TTL write: whether the fence held and whether the thread was live. */
  private writeResult(thread: string, fenced: boolean): string {
    const live = this.ttlMs ? "(SELECT count(*) FROM exp)::int" : "1";
    return fenced ? this.fenceResult(thread, `, ${live} AS live`) : `SELECT 1 AS held, ${live} AS live`;
  }

  /**
   * Runs a write built with {@link writeResult}: refused without the lease; on an expired thread
   * (nothing stored), deletes the thread, whole, and runs the write again, which then starts it anew.
   */
  private async guardedWrite(
    threadId: string,
    fence: LeaseFence | undefined,
    operation: string,
    fenceOperation: string,
    command: string,
    sql: string,
    values: unknown[],
    name?: string,
  ): Promise<void> {
    for (;;) {
      const rows = await this.run<FenceRow & { live: number }>(command, operation, sql, values, this.pool, name);
      if (fence) this.checkFenceResult(threadId, fence, rows, fenceOperation);
      if (rows[0]!.live > 0) return;
      await this.deleteIfExpired(threadId, operation);
    }
  }

  /**
   * One statement, hence one transaction: deletes the thread's expiry row if it expired (locking it,
   * so a write moving it forward meanwhile wins), and with it every other row of the thread but the
   * lease. Returns 1 if it deleted the thread.
   */
  private async deleteIfExpired(threadId: string, operation: string): Promise<number> {
    const gone = (table: string) => `DELETE FROM ${table} WHERE thread_id = $1 AND EXISTS (SELECT 1 FROM e)`;
    const rows = await this.run<{ n: number }>(
      "DELETE expired thread",
      operation,
      `WITH e AS (DELETE FROM ${this.t.expiry} WHERE thread_id = $1 AND expires_at <= ${NOW_MS} RETURNING 1), ` +
        `w AS (${gone(this.t.writes)}), b AS (${gone(this.t.blobs)}), ch AS (${gone(this.t.chunks)}), st AS (${gone(this.t.threads)}), ` +
        `c AS (${gone(this.t.checkpoints)}) SELECT count(*)::int AS n FROM e`,
      [threadId],
    );
    return rows[0]?.n ?? 0;
  }

  /** `refreshOnRead`: after a read, moves the expiry of threads still live forward, in one statement. */
  private async refresh(threadIds: string[], operation: string): Promise<void> {
    await this.run(
      "UPDATE expiry",
      operation,
      `UPDATE ${this.t.expiry} SET expires_at = ${NOW_MS} + $2::bigint WHERE thread_id = ANY($1::text[]) AND expires_at > ${NOW_MS}`,
      [threadIds, this.ttlMs],
    );
  }

  /** An UPDATE applying a status patch when the record names its checkpoint (conditional on the fence when `fenced`, and on `condition`). */
  private patchSql(p: Params, thread: string, patch: ThreadStatusPatch, fenced: boolean, condition?: string): string {
    checkId("checkpoint_id", patch.checkpointId);
    const sets = [`updated_at = ${p.add(patch.updatedAt)}::bigint`];
    if (patch.state !== undefined) sets.push(`state = ${p.add(patch.state)}`);
    if (patch.error === null) sets.push(`error = NULL`);
    else if (patch.error !== undefined) sets.push(`error = ${p.add(patch.error)}`);
    if (patch.interrupts === null) sets.push(`interrupts = NULL`);
    else if (patch.interrupts !== undefined) {
      // A JSON merge patch by task id: a task's value replaces its entry, a null removes it.
      const merge = p.add(JSON.stringify(patch.interrupts));
      sets.push(
        `interrupts = NULLIF((COALESCE(interrupts, '{}'::jsonb) || ${merge}::jsonb) - ARRAY(SELECT key FROM jsonb_each(${merge}::jsonb) WHERE value = 'null'::jsonb), '{}'::jsonb)`,
      );
    }
    if (patch.addAttempts !== undefined) sets.push(`attempts = attempts + ${p.add(patch.addAttempts)}::integer`);
    if (patch.attemptedAt !== undefined) sets.push(`attempted_at = ${p.add(patch.attemptedAt)}::bigint`);
    return (
      `UPDATE ${this.t.threads} SET ${sets.join(", ")} WHERE thread_id = ${thread} AND checkpoint_id = ${p.add(patch.checkpointId)}` +
      (fenced ? ` AND EXISTS (SELECT 1 FROM fence)` : "") +
      (condition ? ` AND ${condition}` : "")
    );
  }

  private chunkValues(p: Params, thread: string, chunks: ChunkRecord[]): { source: string; rows: number } | undefined {
    const unique = dedupe(chunks, (c) => `${c.hash}\u0000${c.index}`, "first");
    if (unique.length === 0) return undefined;
    for (const chunk of unique) checkId("chunk hash", chunk.hash);
    const rows = unique.flatMap((c) => partRows(c));
    return { source: rowSource(p, [thread], ["text", "integer", "integer", "bytea"], rows), rows: rows.length };
  }

  /**
   * The name a write statement runs under when it may run prepared: only texts of a few rows (the
   * text grows with the rows), so that a connection prepares a bounded set of them. Parsing and
   * planning a put's statement cost about 0.2 ms of its 0.4 ms here (synchronous_commit off).
   */
  private writeStatementName(sql: string, rows: number): string | undefined {
    return this.prepared && rows <= NAMED_WRITE_ROWS ? statementName(sql) : undefined;
  }

  /**
   * One query for up to `limit` checkpoints matching `where`, newest first, with the blobs each
   * references and its pending writes, as rows tagged `c`, `b` and `w`.
   */
  private readQuery(where: string, limit: string): string {
    const { checkpoints, blobs, writes } = this.t;
    return (
      `WITH cp AS (SELECT *, row_number() OVER (ORDER BY thread_id DESC, checkpoint_ns DESC, checkpoint_id DESC) AS pos ` +
      `FROM ${checkpoints} WHERE ${where} ORDER BY thread_id DESC, checkpoint_ns DESC, checkpoint_id DESC LIMIT ${limit}), ` +
      // The blob at each channel's version, or, for a delta channel, every blob from its chain's root to it.
      `bl AS (SELECT cp.pos, cp.thread_id, cp.checkpoint_ns, cp.checkpoint_id, b.channel, b.version, b.base_version, ` +
      `b.value_type, b.value_data, b.value_chunk, b.refs ` +
      `FROM cp CROSS JOIN LATERAL jsonb_each_text(cp.channel_versions) AS v(channel, version) ` +
      `JOIN ${blobs} b ON b.thread_id = cp.thread_id AND b.checkpoint_ns = cp.checkpoint_ns AND b.channel = v.channel ` +
      `AND b.version COLLATE "C" BETWEEN COALESCE(cp.delta_roots ->> v.channel, v.version) AND v.version), ` +
      `wr AS (SELECT cp.pos, cp.thread_id, cp.checkpoint_ns, cp.checkpoint_id, w.channel, w.task_id, w.idx, w.task_path, ` +
      `w.value_type, w.value_data, w.value_chunk, w.refs ` +
      `FROM cp JOIN ${writes} w ON w.thread_id = cp.thread_id AND w.checkpoint_ns = cp.checkpoint_ns AND w.checkpoint_id = cp.checkpoint_id), ` +
      `${piecesCte(this.t.chunks, "h.thread_id", ["SELECT thread_id, checkpoint_chunk ->> 'hash' FROM cp WHERE checkpoint_chunk IS NOT NULL", "SELECT thread_id, metadata_chunk ->> 'hash' FROM cp WHERE metadata_chunk IS NOT NULL"])} ` +
      `SELECT 'c' AS kind, pos, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, NULL::text AS channel, ` +
      `NULL::text AS key, NULL::integer AS idx, NULL::text AS extra, checkpoint_type AS type, checkpoint_data AS data, ` +
      `checkpoint_chunk AS chunk, NULL::jsonb AS refs, metadata_type, metadata_data, metadata_chunk, metadata_json, metadata_json_raw, ` +
      `channel_versions, delta_roots FROM cp ` +
      `UNION ALL ` +
      `SELECT 'b', pos, thread_id, checkpoint_ns, checkpoint_id, NULL, channel, version, NULL, base_version, ` +
      `value_type, value_data, value_chunk, refs, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM bl ` +
      `UNION ALL ` +
      `SELECT 'w', pos, thread_id, checkpoint_ns, checkpoint_id, NULL, channel, task_id, idx, task_path, ` +
      `value_type, value_data, value_chunk, refs, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM wr ` +
      `UNION ALL ` +
      `SELECT 'p', NULL, thread_id, NULL, NULL, NULL, NULL, hash, idx, part::text, NULL, data, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM pc`
    );
  }
}

/**
 * A `pc` CTE: the chunks and shared pieces that the rows of `bl` and `wr` reference (their `refs`, and
 * the hash of a split value), every index of each, once. `thread` is the thread column or parameter
 * the references belong to; `extra` adds further `(thread_id, hash)` sources.
 */
function piecesCte(chunks: string, thread: string, extra: string[] = []): string {
  const byThread = thread === "h.thread_id";
  const t = (table: string) => (byThread ? `${table}.thread_id` : `${thread}::text`);
  const sources = [
    `SELECT ${t("bl")}, r.hash FROM bl CROSS JOIN LATERAL jsonb_array_elements_text(bl.refs) AS r(hash) WHERE bl.refs IS NOT NULL`,
    `SELECT ${t("bl")}, bl.value_chunk ->> 'hash' FROM bl WHERE bl.value_chunk IS NOT NULL`,
    `SELECT ${t("wr")}, r.hash FROM wr CROSS JOIN LATERAL jsonb_array_elements_text(wr.refs) AS r(hash) WHERE wr.refs IS NOT NULL`,
    `SELECT ${t("wr")}, wr.value_chunk ->> 'hash' FROM wr WHERE wr.value_chunk IS NOT NULL`,
    ...(byThread ? extra : []),
  ];
  return (
    `hs AS (${sources.join(" UNION ")}), ` +
    `pc AS (SELECT c.thread_id, c.hash, c.idx, c.part, c.data FROM (SELECT DISTINCT * FROM hs) AS h(thread_id, hash) ` +
    `JOIN ${chunks} c ON c.thread_id = h.thread_id AND c.hash = h.hash)`
  );
}

/**
 * The largest part of a chunk row: below PostgreSQL's TOAST threshold (about 2 KB per row), so a part is
 * stored inline in the table's own pages rather than moved to its TOAST table (see migration 5).
 */
const PART_BYTES = 1800;

/**
 * A chunk's rows `[hash, idx, part, data]`: whole as part 0 when it fits one part, else split into
 * equal parts numbered from 1 (equal, so that a 2.1 KB message makes two rows of half a kilobyte
 * over 1 KB rather than one full and one nearly empty).
 */
function partRows(chunk: ChunkRecord): unknown[][] {
  const { data } = chunk;
  if (data.byteLength <= PART_BYTES) return [[chunk.hash, chunk.index, 0, buffer(data)]];
  const size = Math.ceil(data.byteLength / Math.ceil(data.byteLength / PART_BYTES));
  const rows: unknown[][] = [];
  for (let offset = 0, part = 1; offset < data.byteLength; offset += size, part += 1) {
    rows.push([chunk.hash, chunk.index, part, buffer(data.subarray(offset, offset + size))]);
  }
  return rows;
}

/** One row of the chunks table: a part of one chunk (part 0: the chunk kept whole). */
interface ChunkPart {
  hash: string;
  index: number;
  part: number;
  data: Uint8Array;
}

/**
 * Chunks from their rows (in any order): part 0 when there is one (a chunk kept whole, also by an
 * earlier release; it wins over parts of the same chunk sent again later), else the parts in order.
 */
function joinParts(rows: ChunkPart[]): ChunkRecord[] {
  const byChunk = new Map<string, ChunkPart[]>();
  for (const row of rows) {
    const key = `${row.hash}\u0000${row.index}`;
    const list = byChunk.get(key);
    if (list) list.push(row);
    else byChunk.set(key, [row]);
  }
  const out: ChunkRecord[] = [];
  for (const list of byChunk.values()) {
    const whole = list.find((r) => r.part === 0);
    if (whole) {
      out.push({ hash: whole.hash, index: whole.index, data: whole.data });
      continue;
    }
    list.sort((a, b) => a.part - b.part);
    const data = new Uint8Array(list.reduce((n, r) => n + r.data.byteLength, 0));
    let offset = 0;
    for (const r of list) {
      data.set(r.data, offset);
      offset += r.data.byteLength;
    }
    out.push({ hash: list[0]!.hash, index: list[0]!.index, data });
  }
  return out;
}

/** The server's clock in ms since the epoch: lease expiry is judged by it, whatever the workers' clocks say. */
const NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

const STATUS_COLUMNS = "thread_id, state, checkpoint_id, updated_at, error, interrupts, attempts, attempted_at";

/** An INSERT's row source made conditional on the `fence` CTE (when `fenced`) and the `exp` CTE (with a TTL). */
function guarded(source: string, fenced: boolean, ttl: boolean): string {
  const conditions = [...(fenced ? ["EXISTS (SELECT 1 FROM fence)"] : []), ...(ttl ? ["EXISTS (SELECT 1 FROM exp)"] : [])];
  return conditions.length === 0 ? source : `SELECT * FROM (${source}) AS g WHERE ${conditions.join(" AND ")}`;
}

interface FenceRow {
  held: number;
  current_token: string | null;
  current_worker: string | null;
  current_released: boolean | null;
}

interface LeaseRow {
  token: string | number;
  worker_id: string;
  expires_at: string | number;
}

interface StatusRow {
  thread_id: string;
  state: ThreadState;
  checkpoint_id: string;
  updated_at: string | number;
  error: string | null;
  interrupts: Record<string, unknown> | null;
  attempts: number;
  attempted_at: string | number | null;
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
  if (row.interrupts !== null) record.interrupts = row.interrupts;
  if (row.attempted_at !== null) record.attemptedAt = Number(row.attempted_at);
  return record;
}

/** The error for a refused fenced call, from the lease row the statement saw. */
function leaseLost(threadId: string, fence: LeaseFence, token: string | null, worker: string | null, released: boolean | null, operation: string): LeaseLostError {
  if (token === null) return new LeaseLostError(threadId, fence.token, {}, operation);
  const current = Number(token);
  // The statement's snapshot may predate a claim it then waited for: say only what is certain.
  if (current === fence.token && !released) return new LeaseLostError(threadId, fence.token, undefined, operation);
  return new LeaseLostError(threadId, fence.token, { token: current, holder: released ? null : worker }, operation);
}

function timeoutOption(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 2 ** 31 - 1) {
    throw new InvalidConfigError(name, `PostgresStore: "${name}" must be a non-negative integer of milliseconds (0 for no limit), got ${String(value)}.`);
  }
  return value;
}

function checkScope(scope: ThreadScope): void {
  checkId("thread_id", scope.threadId);
  checkId("checkpoint_ns", scope.checkpointNs);
}

function dedupe<T>(items: T[], key: (item: T) => string, keep: "first" | "last"): T[] {
  const seen = new Map<string, T>();
  for (const item of items) {
    const k = key(item);
    if (keep === "last" || !seen.has(k)) seen.set(k, item);
  }
  return seen.size === items.length ? items : [...seen.values()];
}

/** `type, data, chunk` placeholders of a serialized value. */
function valueParams(p: Params, value: SerializedValue): string {
  return `${p.add(value.type)}::text, ${p.add(buffer(value.data))}::bytea, ${p.add(value.chunkRef ? JSON.stringify(value.chunkRef) : null)}::jsonb`;
}

/** pg sends a Buffer as a binary parameter; a plain Uint8Array would be sent as text. */
function buffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** A plain Uint8Array view of pg's Buffer, so callers comparing bytes see the type they stored. */
function bytes(data: Buffer | null): Uint8Array {
  return data ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(0);
}

function toValue(row: Pick<ReadRow, "type" | "data" | "chunk"> & { refs?: string[] | null }): SerializedValue {
  const value: SerializedValue = { type: row.type ?? "empty", data: bytes(row.data) };
  if (row.chunk) value.chunkRef = row.chunk;
  if (row.refs) value.refs = row.refs;
  return value;
}

function toPart(row: ReadRow): ChunkPart {
  return { hash: row.key!, index: row.idx!, part: Number(row.extra ?? 0), data: bytes(row.data) };
}

function toBlob(row: ReadRow): BlobRecord {
  const blob: BlobRecord = { channel: row.channel!, version: row.key!, value: toValue(row) };
  if (row.extra !== null) blob.baseVersion = row.extra;
  return blob;
}

function toWrite(row: ReadRow): WriteRecord {
  return { taskId: row.key!, idx: row.idx!, channel: row.channel!, value: toValue(row), taskPath: row.extra ?? "" };
}

/** Groups the tagged rows of a read query into checkpoints, in the query's order. */
function assemble(rows: ReadRow[]): StoredCheckpoint[] {
  const byPos = new Map<number, StoredCheckpoint>();
  for (const row of rows) {
    if (row.kind !== "c") continue;
    const record: CheckpointRecord = {
      threadId: row.thread_id,
      checkpointNs: row.checkpoint_ns,
      checkpointId: row.checkpoint_id,
      parentCheckpointId: row.parent_checkpoint_id ?? undefined,
      checkpoint: toValue(row),
      metadata: toValue({ type: row.metadata_type, data: row.metadata_data, chunk: row.metadata_chunk }),
      metadataJson: row.metadata_json_raw
        ? (JSON.parse(row.metadata_json_raw.toString("utf8")) as Record<string, unknown>)
        : (row.metadata_json ?? {}),
      channelVersions: row.channel_versions ?? {},
    };
    if (row.delta_roots) record.deltaRoots = row.delta_roots;
    byPos.set(Number(row.pos), { record, blobs: [], writes: [] });
  }
  const partsByThread = new Map<string, ChunkPart[]>();
  for (const row of rows) {
    if (row.kind === "p") {
      const list = partsByThread.get(row.thread_id) ?? [];
      partsByThread.set(row.thread_id, list);
      list.push(toPart(row));
      continue;
    }
    const stored = byPos.get(Number(row.pos));
    if (!stored) continue;
    if (row.kind === "b") stored.blobs.push(toBlob(row));
    else if (row.kind === "w") stored.writes.push(toWrite(row));
  }
  const chunksByThread = new Map([...partsByThread].map(([thread, parts]) => [thread, joinParts(parts)] as const));
  for (const stored of byPos.values()) {
    const chunks = chunksByThread.get(stored.record.threadId);
    if (chunks) stored.chunks = chunks;
  }
  return [...byPos.entries()].sort((a, b) => a[0] - b[0]).map(([, stored]) => stored);
}

const UNSTORABLE_IN_JSONB = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * jsonb rejects `\u0000` and lone surrogates. Both are replaced by U+FFFD in the indexed copy, and in
 * filters the same way, so a filter still finds its records (at worst a few more, which core's
 * re-check drops); the exact JSON is kept beside it for reads.
 */
function sanitizeJson(value: unknown): unknown {
  if (typeof value === "string") return value.replace(UNSTORABLE_IN_JSONB, "\uFFFD");
  if (Array.isArray(value)) return value.map(sanitizeJson);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [sanitizeJson(k) as string, sanitizeJson(v)]));
  }
  return value;
}

function storableMetadata(metadata: Record<string, unknown>): { json: string; raw: Buffer | null } {
  // JSON.stringify escapes NUL and lone surrogates (\u0000, \udc00), so this text is lossless.
  const exact = JSON.stringify(metadata);
  if (!needsSanitizing(metadata)) return { json: exact, raw: null };
  return { json: JSON.stringify(sanitizeJson(metadata)), raw: Buffer.from(exact, "utf8") };
}

function needsSanitizing(value: unknown): boolean {
  if (typeof value === "string") return /\u0000|[\uD800-\uDFFF]/.test(value) && value !== sanitizeJson(value);
  if (Array.isArray(value)) return value.some(needsSanitizing);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).some(([k, v]) => needsSanitizing(k) || needsSanitizing(v));
  }
  return false;
}
