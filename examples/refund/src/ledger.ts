/**
 * The payments ledger: its own SQLite file, apart from the checkpoints. `payments` has the idempotency
 * key as its primary key, so a second charge under the same key inserts nothing; `attempts` records
 * every call, which is what the card would have seen without the key.
 *
 * @module
 */
import Database from "better-sqlite3";

export interface RunRow {
  worker: number;
  node: string;
  note: string;
}

/** The payments ledger of the demo. */
export class Ledger {
  private readonly db: Database.Database;

  constructor(path: string) {
    this.db = new Database(path, { timeout: 5000 });
    this.db.pragma("journal_mode = WAL");
    this.db.pragma("synchronous = FULL");
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS payments (
        idempotency_key TEXT PRIMARY KEY,
        order_id TEXT NOT NULL,
        amount INTEGER NOT NULL,
        worker INTEGER NOT NULL
      );
      CREATE TABLE IF NOT EXISTS attempts (id INTEGER PRIMARY KEY, idempotency_key TEXT NOT NULL, worker INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY, worker INTEGER NOT NULL, node TEXT NOT NULL, note TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS approvals (order_id TEXT PRIMARY KEY, approved_by TEXT NOT NULL);
    `);
  }

  /** Charges once per key; returns whether this call charged. */
  charge(key: string, orderId: string, amount: number, worker: number): boolean {
    return this.db.transaction(() => {
      this.db.prepare("INSERT INTO attempts (idempotency_key, worker) VALUES (?, ?)").run(key, worker);
      const result = this.db
        .prepare("INSERT OR IGNORE INTO payments (idempotency_key, order_id, amount, worker) VALUES (?, ?, ?, ?)")
        .run(key, orderId, amount, worker);
      return result.changes === 1;
    })();
  }

  recordRun(worker: number, node: string, note = ""): void {
    this.db.prepare("INSERT INTO runs (worker, node, note) VALUES (?, ?, ?)").run(worker, node, note);
  }

  /** The human's answer, kept so that a new worker can give it again if the run has to start over. */
  recordApproval(orderId: string, approvedBy: string): void {
    this.db.prepare("INSERT OR REPLACE INTO approvals (order_id, approved_by) VALUES (?, ?)").run(orderId, approvedBy);
  }

  approval(orderId: string): string | undefined {
    const row = this.db.prepare("SELECT approved_by FROM approvals WHERE order_id = ?").get(orderId) as { approved_by: string } | undefined;
    return row?.approved_by;
  }

  runs(): RunRow[] {
    return this.db.prepare("SELECT worker, node, note FROM runs ORDER BY id").all() as RunRow[];
  }

  /** Charges that happened, and calls to charge (what would have happened without the key). */
  counts(): { charges: number; attempts: number } {
    const charges = (this.db.prepare("SELECT COUNT(*) AS n FROM payments").get() as { n: number }).n;
    const attempts = (this.db.prepare("SELECT COUNT(*) AS n FROM attempts").get() as { n: number }).n;
    return { charges, attempts };
  }

  close(): void {
    this.db.close();
  }
}
