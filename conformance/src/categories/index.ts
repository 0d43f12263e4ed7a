/**
 * Every contract category, in the order the report lists them. Each is also exported alone, so a
 * backend can run one while it is being written.
 *
 * @module
 */
import type { Category } from "../types.js";
import { badInput } from "./bad-input.js";
import { copyThread } from "./copy-thread.js";
import { deleteThread } from "./delete-thread.js";
import { deltaHistory } from "./delta-history.js";
import { deltaStorage } from "./delta-storage.js";
import { durability } from "./durability.js";
import { graphs } from "./graphs.js";
import { forks, leases } from "./leases.js";
import { listPaging } from "./list-paging.js";
import { metadataFilter } from "./metadata-filter.js";
import { parallelWrites } from "./parallel-writes.js";
import { retention } from "./retention.js";
import { serialization } from "./serialization.js";
import { storeRecords } from "./store-records.js";
import { threadListing } from "./thread-listing.js";
import { threadStatus } from "./thread-status.js";
import { writeOrder } from "./write-order.js";
import { writeRules } from "./write-rules.js";

export {
  badInput,
  copyThread,
  deleteThread,
  deltaHistory,
  deltaStorage,
  durability,
  forks,
  graphs,
  leases,
  listPaging,
  metadataFilter,
  parallelWrites,
  retention,
  serialization,
  storeRecords,
  threadListing,
  threadStatus,
  writeOrder,
  writeRules,
};

/** All contract categories. */
export const CATEGORIES: readonly Category[] = Object.freeze([
  writeRules,
  writeOrder,
  parallelWrites,
  deleteThread,
  copyThread,
  retention,
  listPaging,
  metadataFilter,
  serialization,
  storeRecords,
  deltaHistory,
  deltaStorage,
  badInput,
  graphs,
  durability,
  leases,
  threadStatus,
  threadListing,
]);
