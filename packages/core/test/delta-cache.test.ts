import { describe, expect, it } from "vitest";

import { DeltaCache, type LineageState } from "../src/delta-cache.js";

function state(checkpointId: string, bytes = 10): LineageState {
  return { checkpointId, channelVersions: {}, deltaRoots: {}, lists: new Map(), bytes };
}

const present = (cache: DeltaCache, threads: string[]) => threads.filter((t) => cache.get(t, "") !== undefined);

describe("DeltaCache", () => {
  it("evicts the least recently used thread, a read counting as a use", () => {
    const cache = new DeltaCache({ maxThreads: 2 });
    cache.set("a", "", state("1"));
    cache.set("b", "", state("1"));
    expect(cache.get("a", "")?.checkpointId).toBe("1");
    cache.set("c", "", state("1"));
    expect(cache.size).toBe(2);
    expect(cache.get("b", "")).toBeUndefined();
    expect(cache.get("c", "")?.checkpointId).toBe("1");
    expect(cache.get("a", "")?.checkpointId).toBe("1");
  });

  it("counts a write as a use: a thread written again is the newest", () => {
    const cache = new DeltaCache({ maxThreads: 2 });
    cache.set("a", "", state("1"));
    cache.set("b", "", state("1"));
    cache.set("a", "", state("2"));
    cache.set("c", "", state("1"));
    expect(cache.get("b", "")).toBeUndefined();
    expect(cache.get("a", "")?.checkpointId).toBe("2");
  });

  it("keeps the order right when the newest thread is read and written again", () => {
    const cache = new DeltaCache({ maxThreads: 2 });
    cache.set("a", "", state("1"));
    cache.set("b", "", state("1"));
    cache.get("b", "");
    cache.set("b", "", state("2"));
    cache.set("b", "", state("3"));
    cache.set("c", "", state("1"));
    expect(cache.get("b", "")?.checkpointId).toBe("3");
    expect(cache.get("a", "")).toBeUndefined();
    // b was read last: c is now the least recently used.
    cache.set("d", "", state("1"));
    expect(present(cache, ["b", "c", "d"]).sort()).toEqual(["b", "d"]);
  });

  it("drops a thread whose state outgrows the byte budget, and counts bytes of replaced states once", () => {
    const cache = new DeltaCache({ maxThreads: 10, maxBytes: 100 });
    cache.set("a", "", state("1", 60));
    cache.set("a", "", state("2", 60));
    cache.set("b", "", state("1", 30));
    // 60 + 30 fit: the replaced 60 is not counted twice.
    expect(cache.get("a", "")?.checkpointId).toBe("2");
    expect(cache.get("b", "")?.checkpointId).toBe("1");
    cache.set("b", "", state("2", 500));
    expect(cache.get("b", "")).toBeUndefined();
    cache.set("c", "", state("1", 40));
    // 60 + 40 = 100 fits; one byte more evicts the least recently used (a).
    expect(present(cache, ["a", "c"])).toEqual(["a", "c"]);
    cache.set("d", "", state("1", 1));
    expect(cache.get("c", "")?.checkpointId).toBe("1");
    expect(cache.get("a", "")).toBeUndefined();
  });

  it("forgets every namespace of a deleted thread, the newest included", () => {
    const cache = new DeltaCache();
    cache.set("a", "", state("1"));
    cache.set("a", "sub", state("1"));
    cache.set("b", "", state("1"));
    cache.deleteThread("b");
    cache.deleteThread("a");
    expect(cache.size).toBe(0);
    cache.set("b", "", state("2"));
    expect(cache.get("b", "")?.checkpointId).toBe("2");
    expect(cache.size).toBe(1);
  });
});
