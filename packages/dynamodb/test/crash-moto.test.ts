import { crashSweep } from "./fixtures/crash-sweep.js";

// The full sweep runs on dynalite (crash-dynalite.test.ts); here CI samples the kill points.
crashSweep("moto", { sampledInCi: true });
