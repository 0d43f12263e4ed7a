// The chaos test and the two-process concurrent invoke, with manyWorkers, on FerretDB's PostgreSQL handler.
import { mongoChaos } from "./chaos.js";

mongoChaos("postgresql", { chaos: true });
