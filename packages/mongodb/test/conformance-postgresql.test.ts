// The whole conformance suite, LangChain's validation suite included, on FerretDB's PostgreSQL handler.
import { mongoConformance } from "./conformance.js";

mongoConformance("postgresql");
