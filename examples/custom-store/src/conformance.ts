// What `resumable-conformance` loads: a default export that opens the store inside the directory the
// suite hands it. The contract checks give every call a new, empty directory; the crash suite gives
// the killed process and the one that resumes the same directory, so the second finds the first's file.
import { join } from "node:path";

import { JsonFileStore } from "./json-file-store.js";

export default {
  name: "json-file",
  create: ({ workDir }: { workDir: string }) => new JsonFileStore(join(workDir, "checkpoints.json")),
};
