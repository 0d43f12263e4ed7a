// SIGKILL after every command of a prune and of a copyThread, on FerretDB's PostgreSQL handler.
import { mongoRetentionCrashSweep } from "./crash-retention.js";

mongoRetentionCrashSweep("postgresql");
