import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type {
  BlobRecord, CheckpointRecord, CheckpointStore, ChunkRecord, HistoryAncestor, HistoryQuery, ListCheckpointsQuery,
  PutCheckpointRequest, PutWritesRequest, StoredCheckpoint, ThreadScope, WriteRecord,
} from "@resumable/core";

type Row<T> = T & { threadId: string; checkpointNs: string; checkpointId?: string };
interface Data { checkpoints: CheckpointRecord[]; blobs: Row<BlobRecord>[]; writes: Row<WriteRecord>[]; chunks: Row<ChunkRecord>[] }

// Uint8Array fields go to the file as base64 and come back as Uint8Array.
const replacer = (_k: string, v: unknown) => (v instanceof Uint8Array ? { $bytes: Buffer.from(v).toString("base64") } : v);
const reviver = (_k: string, v: any) => (v && typeof v.$bytes === "string" ? new Uint8Array(Buffer.from(v.$bytes, "base64")) : v);
const inScope = (s: ThreadScope) => (r: ThreadScope) => r.threadId === s.threadId && r.checkpointNs === s.checkpointNs;

/** A CheckpointStore over one JSON file: every change rewrites the file (write, then rename). */
export class JsonFileStore implements CheckpointStore {
  // Records are kept whole (refs and deltaRoots included), and stored() returns delta ranges.
  readonly capabilities = { persistent: true, valueRefs: true, deltaRanges: true };
  private data: Data = { checkpoints: [], blobs: [], writes: [], chunks: [] };
  constructor(readonly file: string) {}

  async setup() { if (existsSync(this.file)) this.data = JSON.parse(readFileSync(this.file, "utf8"), reviver); }
  async close() {}
  private save() { writeFileSync(`${this.file}.tmp`, JSON.stringify(this.data, replacer)); renameSync(`${this.file}.tmp`, this.file); }

  private addChunks(threadId: string, chunks: ChunkRecord[]) {
    for (const c of chunks) if (!this.data.chunks.some((x) => x.threadId === threadId && x.hash === c.hash && x.index === c.index)) this.data.chunks.push({ ...c, threadId, checkpointNs: "" });
  }
  async putCheckpoint({ record, blobs, chunks }: PutCheckpointRequest) {
    this.addChunks(record.threadId, chunks);
    const scope = inScope(record);
    for (const b of blobs) if (!this.data.blobs.some((x) => scope(x) && x.channel === b.channel && x.version === b.version)) this.data.blobs.push({ ...b, threadId: record.threadId, checkpointNs: record.checkpointNs });
    this.data.checkpoints = this.data.checkpoints.filter((c) => !(scope(c) && c.checkpointId === record.checkpointId)).concat(record);
    this.save();
  }
  async putWrites({ threadId, checkpointNs, checkpointId, writes, chunks, mode }: PutWritesRequest) {
    this.addChunks(threadId, chunks);
    for (const w of writes) {
      const same = (x: Row<WriteRecord>) => x.threadId === threadId && x.checkpointNs === checkpointNs && x.checkpointId === checkpointId && x.taskId === w.taskId && x.idx === w.idx;
      if (mode === "ignore" && this.data.writes.some(same)) continue;
      this.data.writes = this.data.writes.filter((x) => !same(x)).concat({ ...w, threadId, checkpointNs, checkpointId });
    }
    this.save();
  }
  private stored(record: CheckpointRecord, channels?: string[]): StoredCheckpoint & HistoryAncestor {
    const scope = inScope(record);
    const wanted = (ch: string) => !channels || channels.includes(ch);
    // The blob at each channel's version, or for a delta channel every version from its chain's root.
    const inRange = (b: BlobRecord) => {
      const version = record.channelVersions[b.channel];
      const root = record.deltaRoots?.[b.channel];
      return version !== undefined && (root === undefined ? b.version === version : b.version >= root && b.version <= version);
    };
    const blobs = this.data.blobs.filter((b) => scope(b) && wanted(b.channel) && inRange(b));
    const writes = this.data.writes.filter((w) => scope(w) && w.checkpointId === record.checkpointId && wanted(w.channel));
    return { ...record, record, blobs, writes };
  }
  async getCheckpoint(q: ThreadScope & { checkpointId?: string }) {
    const rows = this.data.checkpoints.filter((c) => inScope(q)(c) && (q.checkpointId === undefined || c.checkpointId === q.checkpointId));
    const newest = rows.sort((a, b) => (a.checkpointId < b.checkpointId ? 1 : -1))[0];
    return newest && this.stored(newest);
  }
  async *listCheckpoints(q: ListCheckpointsQuery) {
    const rows = this.data.checkpoints
      .filter((c) => (q.threadId === undefined || c.threadId === q.threadId) && (q.checkpointNs === undefined || c.checkpointNs === q.checkpointNs))
      .filter((c) => (q.checkpointId === undefined || c.checkpointId === q.checkpointId) && (q.before === undefined || c.checkpointId < q.before))
      .sort((a, b) => (a.threadId + "\0" + a.checkpointNs).localeCompare(b.threadId + "\0" + b.checkpointNs) || (a.checkpointId < b.checkpointId ? 1 : -1));
    for (const row of rows.slice(0, q.limit)) yield this.stored(row);
  }
  async getHistory(q: HistoryQuery) {
    const byId = new Map(this.data.checkpoints.filter(inScope(q)).map((c) => [c.checkpointId, c]));
    const ancestors: HistoryAncestor[] = [];
    for (let id = byId.get(q.checkpointId)?.parentCheckpointId; id !== undefined && byId.has(id); id = byId.get(id)!.parentCheckpointId) {
      ancestors.push(this.stored(byId.get(id)!, q.channels));
    }
    return { ancestors };
  }
  async getChunks(threadId: string, hashes: string[]) { return this.data.chunks.filter((c) => c.threadId === threadId && hashes.includes(c.hash)); }
  async getBlobs(scope: ThreadScope, keys: Array<{ channel: string; version: string }>) {
    return this.data.blobs.filter((b) => inScope(scope)(b) && keys.some((k) => k.channel === b.channel && k.version === b.version));
  }
  async deleteThread(threadId: string) {
    const keep = (r: { threadId: string }) => r.threadId !== threadId;
    this.data = { checkpoints: this.data.checkpoints.filter(keep), blobs: this.data.blobs.filter(keep), writes: this.data.writes.filter(keep), chunks: this.data.chunks.filter(keep) };
    this.save();
  }
}
