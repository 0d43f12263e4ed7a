// The same suite as `pnpm conformance`, inside vitest: three lines in a store's own test file.
import { runConformance } from "@resumable/conformance";

import target from "../src/conformance.js";

runConformance(target, { categories: ["write-rules", "delete-thread", "delta-history", "graphs"] });
