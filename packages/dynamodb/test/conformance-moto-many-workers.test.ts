// Leases, thread status and thread listing with the manyWorkers option, on moto (dynalite has no
// TransactWriteItems: test/many-workers.test.ts checks that setup() refuses it).
import { dynamoDbConformance } from "./fixtures/conformance.js";

dynamoDbConformance("moto", { manyWorkers: true });
