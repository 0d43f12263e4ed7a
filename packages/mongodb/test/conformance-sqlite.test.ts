// The whole conformance suite, LangChain's validation suite included, on FerretDB's SQLite handler.
import { mongoConformance } from "./conformance.js";

mongoConformance("sqlite");
