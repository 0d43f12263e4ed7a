import { retentionCrashSweep } from "./fixtures/crash-retention-sweep.js";

retentionCrashSweep("dynalite");
