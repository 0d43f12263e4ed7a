// The two-process concurrent invoke, with manyWorkers, on FerretDB's SQLite handler (the chaos test runs
// on the PostgreSQL handler: see chaos.ts).
import { mongoChaos } from "./chaos.js";

mongoChaos("sqlite", { chaos: false });
