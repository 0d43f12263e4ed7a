// What `resumable-conformance` loads: a default export that returns a fresh, empty store whenever the
// suite asks, and a teardown that removes what it left behind.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { JsonFileStore } from "./json-file-store.js";

export default {
  name: "json-file",
  create: () => new JsonFileStore(join(mkdtempSync(join(tmpdir(), "json-store-")), "checkpoints.json")),
  teardown: (store: JsonFileStore) => rmSync(dirname(store.file), { recursive: true, force: true }),
};
