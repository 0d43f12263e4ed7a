import { dynamoDbConformance } from "./fixtures/conformance.js";

dynamoDbConformance("moto");
