// dynalite 4 ships no types; this is the part of its API that dynamodb.ts uses.
declare module "dynalite" {
  import type { Server } from "node:http";

  interface DynaliteOptions {
    /** Milliseconds a table stays CREATING (0: ACTIVE at once). */
    createTableMs?: number;
    /** Milliseconds a table stays DELETING. */
    deleteTableMs?: number;
    /** Milliseconds a table stays UPDATING. */
    updateTableMs?: number;
    /** A LevelDB directory; without it the data lives in memory. */
    path?: string;
    /** Maximum item size in bytes. */
    maxItemSizeKb?: number;
  }

  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}
