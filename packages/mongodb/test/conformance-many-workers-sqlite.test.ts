// Leases, thread status and thread listing with the manyWorkers option, on FerretDB's SQLite handler.
import { mongoConformance } from "./conformance.js";

mongoConformance("sqlite", { manyWorkers: true });
