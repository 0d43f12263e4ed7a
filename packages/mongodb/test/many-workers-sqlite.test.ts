// manyWorkers store-level checks on FerretDB's SQLite handler.
import { manyWorkersTests } from "./many-workers.js";

manyWorkersTests("sqlite");
