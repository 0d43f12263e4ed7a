// SIGKILL after every command of a prune and (in CI) of a copyThread, on FerretDB's PostgreSQL handler.
import { mongoRetentionCrashSweep } from "./crash-retention.js";

mongoRetentionCrashSweep("postgresql", { copyInCi: true });
