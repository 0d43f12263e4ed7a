import { dynamoDbConformance } from "./fixtures/conformance.js";

dynamoDbConformance("dynalite");
