/** The Markdown report of a run. @module */
import { STATE_LABEL, type StateKind } from "./graphs.js";
import type { BenchResults } from "./results.js";
import type { Summary } from "./stats.js";

/** Bytes in B, KB, MB or GB (powers of 1024, as the reference figures use). */
export function formatBytes(bytes: number | null): string {
  if (bytes === null || !Number.isFinite(bytes)) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value >= 100 || unit === 0 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}

function ms(value: number): string {
  if (!Number.isFinite(value)) return "—";
  return Math.abs(value) >= 10 ? value.toFixed(1) : Math.abs(value) >= 1 ? value.toFixed(2) : value.toFixed(3);
}

function spread(summary: Summary | null, format: (n: number) => string = ms): string {
  if (!summary) return "—";
  return `${format(summary.median)} (${format(summary.p25)}–${format(summary.p75)})`;
}

function ratio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : "—";
}

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(" | ")} |`, `|${header.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

/** Renders the report; `charts` are the SVG file names written beside it. */
export function renderReport(results: BenchResults, charts: { growth?: string; latency?: string; reads?: string }): string {
  const label = (id: string) => results.backends.find((b) => b.id === id)?.label ?? id;
  const ran = results.backends.filter((b) => b.status === "ran");
  const minutes = (Date.parse(results.finishedAt) - Date.parse(results.startedAt)) / 60_000;
  const out: string[] = [];
  out.push(`# Checkpointer benchmark: ${results.name}`);
  out.push("");
  out.push(
    `Run ${results.startedAt.replace("T", " ").slice(0, 16)} UTC, preset \`${results.config.preset}\`, ${minutes.toFixed(1)} minutes. ` +
      `Backends that ran: ${ran.map((b) => b.label).join(", ") || "none"}.`,
  );
  out.push("");

  out.push("## Targets (measured, not asserted)");
  out.push("");
  const kinds = [...new Set(results.targets.map((t) => t.target))];
  const savers = [...new Set(results.targets.map((t) => t.backend))];
  const mark = (met: boolean | null) => (met === null ? "" : met ? " ✓" : " ✗");
  out.push(
    table(
      ["Target", ...savers.map(label)],
      kinds.map((kind) => [
        kind,
        ...savers.map((saver) => {
          const check = results.targets.find((t) => t.target === kind && t.backend === saver);
          return check ? `${check.measured}${mark(check.met)}` : "—";
        }),
      ]),
    ),
  );
  out.push("");
  out.push(
    "✓ met, ✗ not met. Targets are those of the storage and speed issues, for our savers: storage judged on logical bytes " +
      "(and bytes on disk for the plain reducer), comparisons against LangChain's saver on the same database and, for latency " +
      "and operations, the same durability settings (SQLite FULL against FULL, NORMAL against NORMAL). LangGraph hands a " +
      "saver each user message three times (the input checkpoint's `__start__` value, the `messages` write, the channel " +
      "value) and writes three checkpoints per turn; ours stores each message once and the list as deltas.",
  );
  out.push("");

  out.push("## Backends");
  out.push("");
  out.push(
    table(
      ["Saver", "Database", "Status", "Notes"],
      results.backends.map((b) => [b.label, b.database, b.status, [b.reason, ...b.notes].filter(Boolean).join("; ") || ""]),
    ),
  );
  out.push("");

  out.push("## Growth: bytes stored as a chat thread grows");
  out.push("");
  out.push(
    `Each turn adds a ${formatBytes(results.config.messageBytes)} user message and a ${formatBytes(results.config.messageBytes)} assistant message ` +
      `of seeded random text (seed ${results.config.seed}, the same for every saver); durability \`sync\`. ` +
      `“× raw” divides by the raw message text, the floor no saver can go under. Rows marked *est.* were not written: ` +
      `the plain reducer grows with the square of the turns, so they are extrapolated from the measured curve.`,
  );
  out.push("");
  if (charts.growth) out.push(`![Growth curves](${charts.growth})`, "");
  for (const note of results.notes ?? []) out.push(`- ${note}`);
  if ((results.notes ?? []).length > 0) out.push("");
  const headings: Record<StateKind, string> = {
    plain: "Plain reducer (`MessagesAnnotation`, `messagesStateReducer`)",
    delta: "`DeltaChannel` (`messagesDeltaReducer`), default snapshots (every 100 updates: every 50 turns here)",
    "delta-nosnap":
      "`DeltaChannel` with no snapshot within the thread (`snapshotFrequency` beyond its length), the conversation written " +
      "many turns per run by alternating `user` and `assistant` nodes: one checkpoint per message, no input checkpoint per turn",
  };
  for (const state of ["plain", "delta", "delta-nosnap"] as const) {
    const points = results.growth.filter((g) => g.state === state && results.config.growthTurns.includes(g.turns));
    const withNext = points.some((g) => g.nextThreadPhysicalBytes !== undefined);
    const rows = points
      .map((g) => [
        label(g.backend),
        `${g.turns}${g.estimated ? " *est.*" : ""}`,
        formatBytes(g.rawBytes),
        formatBytes(g.logicalBytes),
        formatBytes(g.logicalBytes / g.turns),
        ratio(g.logicalBytes / g.rawBytes),
        formatBytes(g.physicalBytes),
        g.physicalBytes === null ? "—" : ratio(g.physicalBytes / g.rawBytes),
        g.physicalBytes === null || g.emptyPhysicalBytes === undefined || g.emptyPhysicalBytes === null
          ? "—"
          : ratio((g.physicalBytes - g.emptyPhysicalBytes) / g.rawBytes),
        ...(withNext ? [g.nextThreadPhysicalBytes === undefined ? "—" : ratio(g.nextThreadPhysicalBytes / g.rawBytes)] : []),
        g.msPerTurn === null ? "—" : ms(g.msPerTurn),
      ]);
    if (rows.length === 0) continue;
    out.push(`### ${headings[state]}`);
    out.push("");
    out.push(
      table(["Saver", "Turns", "Raw", "Logical", "Logical / turn", "× raw", "Physical", "× raw", "net × raw", ...(withNext ? ["next thread × raw"] : []), "ms / turn"], rows),
    );
    out.push("");
    if (withNext) {
      out.push(
        "*Next thread*: on disk, what a second thread of the same length (other messages of the same sizes) added to a " +
          "database that already held a 10-turn thread: the cost of each further thread once the tables and indexes exist. " +
          "The first thread of a database also pays for those (*net × raw*): on PostgreSQL a free-space map (24 KB) and a " +
          "visibility map (8 KB) per table and a root page per index, fixed, so it weighs most on short threads.",
      );
      out.push("");
    }
  }

  const pruned = results.prune ?? [];
  if (pruned.length > 0) {
    const keepLast = pruned[0]!.keepLast;
    out.push(`## Retention: bytes before and after \`prune({ keepLast: ${keepLast} })\``);
    out.push("");
    out.push(
      `The longest growth thread of each kind, pruned to its newest ${keepLast} root checkpoints by the savers that can prune ` +
        "(ours, on a store with `capabilities.retention`). A prune keeps what those checkpoints read: the messages of the " +
        "list they hold (every message of the thread, stored once), and for a `DeltaChannel` without a snapshot in them, the " +
        "ancestors back to the nearest snapshot: with no snapshot in the thread, that is all of it. *Messages* is what " +
        "`getState` returned before and after. Physical bytes: SQLite keeps freed pages in the file for reuse (`VACUUM` " +
        "returns them), PostgreSQL after a plain `VACUUM` keeps most of them too.",
    );
    out.push("");
    out.push(
      table(
        ["Saver", "State", "Turns", "Logical before", "Logical after", "After ÷ before", "Physical before", "Physical after", "Checkpoints removed", "Kept for history", "Messages", "ms"],
        pruned.map((p) => [
          label(p.backend),
          STATE_LABEL[p.state],
          String(p.turns),
          formatBytes(p.before.logicalBytes),
          formatBytes(p.after.logicalBytes),
          ratio(p.after.logicalBytes / p.before.logicalBytes),
          formatBytes(p.before.physicalBytes),
          formatBytes(p.after.physicalBytes),
          String(p.removed.checkpoints),
          String(p.removed.keptForHistory),
          p.messagesBefore === p.messagesAfter ? String(p.messagesAfter) : `${p.messagesBefore} → ${p.messagesAfter}`,
          ms(p.ms),
        ]),
      ),
    );
    out.push("");
  }

  if (results.reads.length > 0) {
    out.push("## Reads: `getState` on a `DeltaChannel` thread");
    out.push("");
    out.push(
      "With the default cadence a snapshot is written every 50 turns, so a read at 50, 200 or 1000 turns finds one at the head " +
        "of the thread; the thread with no snapshot is the worst case, where every message must be gathered from the writes " +
        "of its ancestors (LangGraph's default `getDeltaChannelHistory` walks them one `getTuple` at a time).",
    );
    out.push("");
    if (charts.reads) out.push(`![getState latency](${charts.reads})`, "");
    out.push(
      table(
        ["Saver", "State", "Depth (turns)", "ms (median, p25–p75)", "Round trips", "Messages returned"],
        results.reads.map((r) => [label(r.backend), STATE_LABEL[r.state], String(r.depth), spread(r.latencyMs), r.roundTrips === null ? "—" : String(r.roundTrips), String(r.messages)]),
      ),
    );
    out.push("");
  }

  if (results.latency.length > 0) {
    out.push("## Step latency: a chain of 20 trivial nodes");
    out.push("");
    out.push(
      "Per step, median (p25–p75) over repetitions. *Saver's share* is the time per step with the saver minus the time per step " +
        "of the same graph without a checkpointer, in the same repetition. *Floor* is the database's own cost of one operation " +
        "measured in the same repetition (SQLite: an empty committed transaction; PostgreSQL: `SELECT 1`), and *committed " +
        "insert* a one-row insert committed with the saver's own durability settings; the ratios are taken per repetition, " +
        "then summarized. A negative share means the difference drowned in the noise of a shared machine.",
    );
    out.push("");
    if (charts.latency) out.push(`![Latency per mode and backend](${charts.latency})`, "");
    out.push(
      table(
        ["Saver", "State", "Durability", "ms / step", "No checkpointer", "Saver's share", "Floor", "Share ÷ floor", "Committed insert", "Share ÷ insert"],
        results.latency.map((l) => [
          label(l.backend),
          formatBytes(l.stateBytes),
          l.durability,
          spread(l.perStepMs),
          spread(l.baselinePerStepMs),
          spread(l.saverShareMs),
          spread(l.floorMs),
          spread(l.shareOverFloor, (n) => n.toFixed(1)),
          spread(l.writeFloorMs),
          spread(l.shareOverWriteFloor, (n) => n.toFixed(1)),
        ]),
      ),
    );
    out.push("");
  }

  if (results.ops.length > 0) {
    out.push("## Operations per second (direct saver calls)");
    out.push("");
    out.push(
      `\`put\`: a new checkpoint with a new ${formatBytes(results.config.ops.valueBytes)} value of one channel; \`getTuple\`: the newest ` +
        `checkpoint of the thread; \`putWrites\`: one ${formatBytes(results.config.ops.valueBytes)} write of a new task. ` +
        `${results.config.ops.count} calls per repetition, ${results.config.ops.reps} repetitions after 20 warm-up ones (a new thread each), the backends taking turns within each repetition; the checkpoints are built before timing; median (p25–p75).`,
    );
    out.push("");
    const backends = [...new Set(results.ops.map((o) => o.backend))];
    const cell = (backend: string, op: string) => spread(results.ops.find((o) => o.backend === backend && o.op === op)?.perSecond ?? null, (n) => n.toFixed(0));
    out.push(table(["Saver", "put / s", "putWrites / s", "getTuple / s"], backends.map((b) => [label(b), cell(b, "put"), cell(b, "putWrites"), cell(b, "getTuple")])));
    out.push("");
    const walBackends = backends.filter((b) => results.ops.some((o) => o.backend === b && o.walPagesPerCall !== undefined));
    if (walBackends.length > 0) {
      const pages = (backend: string, op: string) => results.ops.find((o) => o.backend === backend && o.op === op)?.walPagesPerCall?.toFixed(2) ?? "—";
      out.push(
        `Pages each call's commit writes to SQLite's WAL (frames; ${results.config.ops.count} calls on a new thread after the timed repetitions, ` +
          "counted from the WAL's growth with automatic checkpoints off): what a commit costs in I/O, whatever the machine's speed.",
      );
      out.push("");
      out.push(table(["Saver", "put: WAL pages", "putWrites: WAL pages"], walBackends.map((b) => [label(b), pages(b, "put"), pages(b, "putWrites")])));
      out.push("");
    }
  }

  out.push("## Machine");
  out.push("");
  out.push(table(["", ""], Object.entries(results.machine).map(([k, v]) => [k, v])));
  out.push("");

  out.push("## How it was measured");
  out.push("");
  out.push(
    [
      "- **Payload**: base64-alphabet text from a seeded PRNG (mulberry32), so no database can compress it away " +
        "(PostgreSQL's TOAST would shrink repeated characters to almost nothing). Every saver gets the same bytes.",
      "- **Logical bytes**: the bytes of the rows the saver wrote, read from the database: SQLite `SUM(length(CAST(col AS BLOB)))` " +
        "over every column of every table; PostgreSQL `octet_length` of every text/bytea column (`pg_column_size` of the others) " +
        "of every table. In-memory savers: the bytes of every string, byte array and key in their maps.",
      "- **Physical bytes**: SQLite `page_count × page_size` after `PRAGMA wal_checkpoint(TRUNCATE)`; PostgreSQL " +
        "`pg_total_relation_size` (table, indexes, TOAST) of every table after `VACUUM`. *Net*: minus the same measure taken " +
        "before the thread's first turn, when the database holds its empty schema (a page or so per table and index, 56 KB for " +
        "Resumable's SQLite file): a fixed cost of the database, shared by all its threads, not a cost of the thread. The " +
        "on-disk target is judged on the net figure; both are shown.",
      "- **Step latency**: each repetition runs the 20-node chain once without a checkpointer and once with the saver (a new " +
        "thread each time), then times the database's floor (median of many operations), for each durability mode in turn (exit, " +
        "async, sync, then the next repetition), so a drift of the machine or the database falls on every mode alike. Warm-up runs come " +
        "first. Every node " +
        "writes only its step number, so the 1 KB or 100 KB payload set by the input rides along unchanged.",
      "- **Floors**: SQLite, an empty committed transaction (`BEGIN; COMMIT`) and a committed one-row insert on a separate file " +
        "in WAL mode with the `synchronous` level of the saver's connection; PostgreSQL, `SELECT 1` and a committed one-row insert on the " +
        "saver's database. An empty SQLite transaction touches no disk, so the committed insert is shown too.",
      "- **Round trips**: statements executed (SQLite: every `run`/`get`/`all`/`iterate`/`exec`, and BEGIN/COMMIT of a " +
        "transaction), queries sent (pg: every `client.query`), or commands reported by a Resumable store's `instrument` hook.",
      "- **Durability**: better-sqlite3 is synchronous, so with SQLite `async` cannot overlap I/O with the next step and looks " +
        "like `sync`; on a networked database it can differ. Whether the server fsyncs is stated under Backends.",
      "- The machine is shared and noisy: read the spreads, and compare ratios, which are taken within one repetition.",
    ].join("\n"),
  );
  out.push("");
  if (results.errors.length > 0) {
    out.push("## Errors");
    out.push("");
    for (const error of results.errors) out.push("```", error.slice(0, 2000), "```");
    out.push("");
  }
  return out.join("\n");
}
