import { crashSweep } from "./fixtures/crash-sweep.js";

crashSweep("moto");
