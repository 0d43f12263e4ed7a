import { describe, expect, it } from "vitest";

import { LeaseLostError, MemoryStore, ResumableError, ResumableSaver } from "../src/index.js";

// A second, separately evaluated copy of core's errors module, as a TypeScript loader or the
// CommonJS build gives a store (the query makes vitest evaluate the file again).
const SECOND_COPY = "../src/errors.ts?second-copy";
const secondCopy = () => import(/* @vite-ignore */ SECOND_COPY) as Promise<typeof import("../src/errors.js")>;

describe("LeaseLostError across copies of @resumable/core", () => {
  it("is recognised by instanceof when another copy of core threw it (a store loaded through another build)", async () => {
    const other = await secondCopy();
    expect(other.LeaseLostError).not.toBe(LeaseLostError);
    const foreign = new other.LeaseLostError("t", 1, { token: 2, holder: "b" }, "put");
    expect(foreign).toBeInstanceOf(LeaseLostError);
    expect(new LeaseLostError("t", 1)).toBeInstanceOf(other.LeaseLostError);
    const lookalike = Object.assign(new Error("no"), { name: "LeaseLostError" });
    expect(lookalike).not.toBeInstanceOf(LeaseLostError);
    expect(new ResumableError("OTHER", "x")).not.toBeInstanceOf(LeaseLostError);
  });

  it("a leased saver tells its owner when the store refuses with another copy's LeaseLostError", async () => {
    const other = await secondCopy();
    const store = new MemoryStore();
    const saver = new ResumableSaver(store);
    const lease = await saver.claimLease("t", { workerId: "a", ttlMs: 60_000 });
    const inner = store.putWrites.bind(store);
    store.putWrites = async (request) => {
      if (request.fence) throw new other.LeaseLostError(request.threadId, request.fence.token, { token: request.fence.token + 1 }, "putWrites");
      return inner(request);
    };
    let lost: unknown;
    const leased = saver.withLease(lease!, { onLost: (error) => (lost = error) });
    await expect(leased.putWrites({ configurable: { thread_id: "t", checkpoint_ns: "", checkpoint_id: "1" } }, [["c", 1]], "task")).rejects.toBeInstanceOf(LeaseLostError);
    expect(lost).toBeInstanceOf(other.LeaseLostError);
  });
});
