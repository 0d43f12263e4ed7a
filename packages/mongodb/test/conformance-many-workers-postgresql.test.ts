// Leases, thread status and thread listing with the manyWorkers option, on FerretDB's PostgreSQL handler.
import { mongoConformance } from "./conformance.js";

mongoConformance("postgresql", { manyWorkers: true });
