/**
 * Versioned schema migrations. Each runs once per schema, in order, inside one transaction that holds
 * a transaction-scoped advisory lock, so any number of processes may call `setup()` at once.
 *
 * @module
 */

/** Table names, all in the store's schema. The prefix keeps them apart from LangChain's own tables. */
export const TABLES = {
  migrations: "resumable_migrations",
  checkpoints: "resumable_checkpoints",
  blobs: "resumable_blobs",
  writes: "resumable_writes",
  chunks: "resumable_chunks",
  leases: "resumable_leases",
  threads: "resumable_threads",
  expiry: "resumable_thread_expiry",
} as const;

/** One migration: its version and the statements it runs, given the quoted schema name. */
export interface Migration {
  version: number;
  description: string;
  statements(schema: string): string[];
}

// Ids are COLLATE "C" so that they sort by code point, as the contract orders checkpoint ids, whatever
// the database's locale. Values are bytea: serialized bytes are never text, and bytea holds NUL bytes.
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "checkpoints, blobs, writes, chunks",
    statements: (s) => [
      `CREATE TABLE ${s}.${TABLES.checkpoints} (
        thread_id text COLLATE "C" NOT NULL,
        checkpoint_ns text COLLATE "C" NOT NULL,
        checkpoint_id text COLLATE "C" NOT NULL,
        parent_checkpoint_id text COLLATE "C",
        checkpoint_type text NOT NULL,
        checkpoint_data bytea NOT NULL,
        checkpoint_chunk jsonb,
        metadata_type text NOT NULL,
        metadata_data bytea NOT NULL,
        metadata_chunk jsonb,
        metadata_json jsonb NOT NULL,
        metadata_json_raw bytea,
        channel_versions jsonb NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
      )`,
      // jsonb_path_ops serves `metadata_json @> $filter`, the only operator the list query uses on it.
      `CREATE INDEX ${TABLES.checkpoints}_metadata ON ${s}.${TABLES.checkpoints} USING gin (metadata_json jsonb_path_ops)`,
      `CREATE TABLE ${s}.${TABLES.blobs} (
        thread_id text COLLATE "C" NOT NULL,
        checkpoint_ns text COLLATE "C" NOT NULL,
        channel text COLLATE "C" NOT NULL,
        version text COLLATE "C" NOT NULL,
        value_type text NOT NULL,
        value_data bytea NOT NULL,
        value_chunk jsonb,
        base_version text COLLATE "C",
        PRIMARY KEY (thread_id, checkpoint_ns, channel, version)
      )`,
      `CREATE TABLE ${s}.${TABLES.writes} (
        thread_id text COLLATE "C" NOT NULL,
        checkpoint_ns text COLLATE "C" NOT NULL,
        checkpoint_id text COLLATE "C" NOT NULL,
        task_id text COLLATE "C" NOT NULL,
        idx integer NOT NULL,
        channel text COLLATE "C" NOT NULL,
        value_type text NOT NULL,
        value_data bytea NOT NULL,
        value_chunk jsonb,
        task_path text COLLATE "C" NOT NULL,
        PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
      )`,
      `CREATE TABLE ${s}.${TABLES.chunks} (
        thread_id text COLLATE "C" NOT NULL,
        hash text COLLATE "C" NOT NULL,
        idx integer NOT NULL,
        data bytea NOT NULL,
        PRIMARY KEY (thread_id, hash, idx)
      )`,
    ],
  },
  {
    // Delta chains and shared pieces: a checkpoint names the root of each delta channel's chain, and a
    // blob or write lists the pieces (rows of the chunks table) it is made of. Rows written by version 1
    // have neither and read as before.
    version: 2,
    description: "delta roots, piece references",
    statements: (s) => [
      `ALTER TABLE ${s}.${TABLES.checkpoints} ADD COLUMN delta_roots jsonb`,
      `ALTER TABLE ${s}.${TABLES.blobs} ADD COLUMN refs jsonb`,
      `ALTER TABLE ${s}.${TABLES.writes} ADD COLUMN refs jsonb`,
    ],
  },
  {
    // Many workers: a lease per thread (times in ms since the epoch by the server's clock; the token
    // only grows and the row outlives deleteThread) and a status per thread, indexed by
    // (state, updated_at, thread_id) so that listing unfinished threads reads only what it returns.
    // Schemas of earlier versions get empty tables: their threads have a status from their next root
    // checkpoint on.
    version: 3,
    description: "thread leases, thread status",
    statements: (s) => [
      `CREATE TABLE ${s}.${TABLES.leases} (
        thread_id text COLLATE "C" PRIMARY KEY,
        token bigint NOT NULL,
        worker_id text NOT NULL,
        expires_at bigint NOT NULL,
        released boolean NOT NULL DEFAULT false
      )`,
      `CREATE TABLE ${s}.${TABLES.threads} (
        thread_id text COLLATE "C" PRIMARY KEY,
        state text NOT NULL,
        checkpoint_id text COLLATE "C" NOT NULL,
        updated_at bigint NOT NULL,
        error text,
        interrupts jsonb,
        attempts integer NOT NULL DEFAULT 0,
        attempted_at bigint
      )`,
      `CREATE INDEX ${TABLES.threads}_state ON ${s}.${TABLES.threads} (state, updated_at, thread_id)`,
    ],
  },
  {
    // Whole-thread TTL (`ttlSeconds`): one row per thread with its expiry (ms since the epoch by the
    // server's clock), so that a thread is live or expired as a whole; the index lets a sweep read only
    // the expired rows. Used only with `ttlSeconds`; schemas of earlier versions get an empty table,
    // and their threads live until their next write.
    version: 4,
    description: "thread expiry",
    statements: (s) => [
      `CREATE TABLE ${s}.${TABLES.expiry} (
        thread_id text COLLATE "C" PRIMARY KEY,
        expires_at bigint NOT NULL
      )`,
      `CREATE INDEX ${TABLES.expiry}_at ON ${s}.${TABLES.expiry} (expires_at)`,
    ],
  },
  {
    // Shared pieces in rows below PostgreSQL's TOAST threshold (about 2 KB): a 2 KB message stored as
    // one value went to the TOAST table as a 1996-byte chunk and a small one, three messages to an
    // 8 KB page, a third of it empty. A value is now split into equal parts numbered from 1, each
    // stored inline; part 0 is a value kept whole (every row written before this version), and a
    // reader takes part 0 when it exists (see the `pc` CTE), so a piece written whole before and
    // split after reads the same.
    version: 5,
    description: "chunk parts",
    statements: (s) => [
      `ALTER TABLE ${s}.${TABLES.chunks} ADD COLUMN part integer NOT NULL DEFAULT 0`,
      `ALTER TABLE ${s}.${TABLES.chunks} DROP CONSTRAINT ${TABLES.chunks}_pkey`,
      `ALTER TABLE ${s}.${TABLES.chunks} ADD PRIMARY KEY (thread_id, hash, idx, part)`,
    ],
  },
  {
    // The GIN index on metadata_json served only list() with a metadata filter and no thread id (with a
    // thread id the primary key narrows to the thread's rows first), at about 100 bytes per checkpoint
    // on disk and an index insert per put. Dropped; a deployment that filters across threads creates
    // its own (see the README).
    version: 6,
    description: "no metadata index",
    statements: (s) => [`DROP INDEX IF EXISTS ${s}.${TABLES.checkpoints}_metadata`],
  },
  {
    // A root checkpoint's put updates its thread's status row; when the state and the indexed
    // updated_at stay as they were (see ThreadStatusWrite.keepUpdatedAtFrom) the update can be HOT,
    // which needs room for the new row version on the same page: keep 30% of each page free.
    version: 7,
    description: "room on status pages",
    statements: (s) => [`ALTER TABLE ${s}.${TABLES.threads} SET (fillfactor = 70)`],
  },
];

/** The newest schema version this package knows. */
export const LATEST_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** First key of the two-key advisory lock (an arbitrary constant naming this package). */
export const ADVISORY_LOCK_CLASS = 0x52534d42; // "RSMB"
