/**
 * Sizes and floors of SQLite databases, measured from the database itself through a connection of
 * the benchmark's own, so every SQLite saver is measured the same way.
 *
 * @module
 */
import Database from "better-sqlite3";

/** Bytes a database holds. */
export interface ByteSize {
  /** Bytes of the rows (or items, or map entries) the saver wrote. */
  logical: number;
  /** What the database occupies (file pages, relations); `null` where there is no such thing. */
  physical: number | null;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * Logical bytes: `SUM(length(CAST(col AS BLOB)))` over every column of every table (integers count as
 * their decimal text). Physical bytes: `page_count * page_size` after `wal_checkpoint(TRUNCATE)`, so
 * the WAL's content is in the main file and the WAL is empty.
 */
export function measureSqliteFile(path: string): ByteSize {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma("wal_checkpoint(TRUNCATE)");
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string }>;
    let logical = 0;
    for (const { name } of tables) {
      const columns = db.pragma(`table_info(${quoteIdent(name)})`) as Array<{ name: string }>;
      if (columns.length === 0) continue;
      const sum = columns.map((c) => `COALESCE(SUM(length(CAST(${quoteIdent(c.name)} AS BLOB))), 0)`).join(" + ");
      const row = db.prepare(`SELECT ${sum} AS bytes FROM ${quoteIdent(name)}`).get() as { bytes: number };
      logical += row.bytes;
    }
    const pageCount = db.pragma("page_count", { simple: true }) as number;
    const pageSize = db.pragma("page_size", { simple: true }) as number;
    return { logical, physical: pageCount * pageSize };
  } finally {
    db.close();
  }
}

/** The settings that decide what a SQLite commit costs. */
export interface SqliteSettings {
  journalMode: string;
  /** `PRAGMA synchronous`: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
  synchronous: number;
  version: string;
}

/** Reads journal mode, synchronous level and library version of an open connection. */
export function sqliteSettings(db: Database.Database): SqliteSettings {
  return {
    journalMode: String(db.pragma("journal_mode", { simple: true })),
    synchronous: Number(db.pragma("synchronous", { simple: true })),
    version: String((db.prepare("SELECT sqlite_version() AS v").get() as { v: string }).v),
  };
}

/**
 * The database's own floor, on a separate file in WAL mode with the given `synchronous` level:
 * an empty committed transaction (the floor) and a one-row insert (a commit that must reach
 * the disk, WAL append and fsync included).
 */
export class SqliteFloor {
  private readonly db: Database.Database;
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly insert: Database.Statement;
  readonly settings: SqliteSettings;

  constructor(path: string, synchronous: number) {
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma(`synchronous = ${Math.trunc(synchronous)}`);
    this.db.exec("CREATE TABLE IF NOT EXISTS floor (x INTEGER)");
    this.begin = this.db.prepare("BEGIN");
    this.commit = this.db.prepare("COMMIT");
    this.insert = this.db.prepare("INSERT INTO floor (x) VALUES (1)");
    this.settings = sqliteSettings(this.db);
  }

  /** One empty committed transaction. */
  empty(): void {
    this.begin.run();
    this.commit.run();
  }

  /** One committed single-row insert. */
  write(): void {
    this.insert.run();
  }

  close(): void {
    this.db.close();
  }
}
