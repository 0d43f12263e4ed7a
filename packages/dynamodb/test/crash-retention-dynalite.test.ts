import { retentionCrashSweep } from "./fixtures/crash-retention-sweep.js";

// CI sweeps copyThread here too (on moto it costs minutes; see the fixture).
retentionCrashSweep("dynalite", { copyInCi: true });
