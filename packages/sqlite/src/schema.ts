/**
 * Versioned schema. Each migration is a list of statements applied in one `BEGIN IMMEDIATE`
 * transaction together with its row in `resumable_migrations`, so two processes running `setup()` at
 * once apply it exactly once (the second waits for the lock, then finds the version recorded).
 *
 * Tables carry a `resumable_` prefix so that they never collide with LangChain's own SqliteSaver
 * tables (`checkpoints`, `writes`) in a shared file.
 *
 * @module
 */

/** One schema version: the statements that take the schema from `version - 1` to `version`. */
export interface Migration {
  version: number;
  statements: string[];
}

export const MIGRATIONS_TABLE = "resumable_migrations";

export const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS ${MIGRATIONS_TABLE} (
  version INTEGER PRIMARY KEY,
  applied_at TEXT NOT NULL
)`;

/**
 * Keys are chosen for the queries: every primary key starts with `thread_id` (so `deleteThread` is a
 * range delete per table), checkpoints are ordered `checkpoint_id DESC` inside a namespace (the newest
 * is the first row of the range, and `list` pages backwards without a sort), blobs are found by
 * `(channel, version)`, writes by their checkpoint. No other index is needed.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    statements: [
      `CREATE TABLE resumable_checkpoints (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        parent_checkpoint_id TEXT,
        checkpoint_type TEXT NOT NULL,
        checkpoint BLOB NOT NULL,
        checkpoint_chunk_ref TEXT,
        metadata_type TEXT NOT NULL,
        metadata BLOB NOT NULL,
        metadata_chunk_ref TEXT,
        metadata_json TEXT NOT NULL,
        channel_versions TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
      ) WITHOUT ROWID`,
      `CREATE TABLE resumable_blobs (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        channel TEXT NOT NULL,
        version TEXT NOT NULL,
        type TEXT NOT NULL,
        data BLOB NOT NULL,
        chunk_ref TEXT,
        base_version TEXT,
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
      )`,
      `CREATE TABLE resumable_writes (
        thread_id TEXT NOT NULL,
        checkpoint_ns TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        task_id TEXT NOT NULL,
        idx INTEGER NOT NULL,
        channel TEXT NOT NULL,
        type TEXT NOT NULL,
        data BLOB NOT NULL,
        chunk_ref TEXT,
        task_path TEXT NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
      )`,
      `CREATE TABLE resumable_chunks (
        thread_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        idx INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (thread_id, hash, idx)
      )`,
    ],
  },
  {
    // Delta chains and shared pieces: a checkpoint names the root of each delta channel's chain, and a
    // blob or write lists the pieces (rows of resumable_chunks) it is made of. Rows written by version 1
    // have neither and read as before.
    version: 2,
    statements: [
      `ALTER TABLE resumable_checkpoints ADD COLUMN delta_roots TEXT`,
      `ALTER TABLE resumable_blobs ADD COLUMN refs TEXT`,
      `ALTER TABLE resumable_writes ADD COLUMN refs TEXT`,
    ],
  },
  {
    // Chunks in parts of at most 1200 bytes (see PART_BYTES in sqlite-store.ts): the table is rebuilt
    // with a part number in its key; rows written before are part 0.
    version: 3,
    statements: [
      `CREATE TABLE resumable_chunks_v3 (
        thread_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        idx INTEGER NOT NULL,
        part INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (thread_id, hash, idx, part)
      )`,
      `INSERT INTO resumable_chunks_v3 (thread_id, hash, idx, part, data) SELECT thread_id, hash, idx, 0, data FROM resumable_chunks`,
      `DROP TABLE resumable_chunks`,
      `ALTER TABLE resumable_chunks_v3 RENAME TO resumable_chunks`,
    ],
  },
  {
    // Many workers: a lease per thread (its fencing token only grows, and outlives deleteThread) and a
    // status per thread, indexed by (state, updated_at, thread_id) so that listing unfinished threads
    // reads only what it returns. Databases of earlier versions get empty tables: their threads have
    // a status from their next root checkpoint on.
    version: 4,
    statements: [
      `CREATE TABLE resumable_leases (
        thread_id TEXT NOT NULL PRIMARY KEY,
        token INTEGER NOT NULL,
        worker_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        released INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID`,
      `CREATE TABLE resumable_threads (
        thread_id TEXT NOT NULL PRIMARY KEY,
        state TEXT NOT NULL,
        checkpoint_id TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        error TEXT,
        interrupts TEXT,
        attempts INTEGER NOT NULL DEFAULT 0,
        attempted_at INTEGER
      ) WITHOUT ROWID`,
      `CREATE INDEX resumable_threads_state ON resumable_threads (state, updated_at, thread_id)`,
    ],
  },
  {
    // Whole-thread TTL (`ttlSeconds`): one row per thread with its expiry, in milliseconds since the
    // epoch, so that a thread is live or expired as a whole; the index lets a sweep read only the
    // expired rows. Used only with `ttlSeconds`; databases of earlier versions get an empty table,
    // and their threads live until their next write.
    version: 5,
    statements: [
      `CREATE TABLE resumable_thread_expiry (
        thread_id TEXT NOT NULL PRIMARY KEY,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID`,
      `CREATE INDEX resumable_thread_expiry_at ON resumable_thread_expiry (expires_at)`,
    ],
  },
];

/** The schema version this package reads and writes. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;
