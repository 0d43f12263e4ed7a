// manyWorkers store-level checks on FerretDB's PostgreSQL handler.
import { manyWorkersTests } from "./many-workers.js";

manyWorkersTests("postgresql");
