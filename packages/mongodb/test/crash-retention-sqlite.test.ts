// SIGKILL after every command of a prune and of a copyThread, on FerretDB's SQLite handler.
import { mongoRetentionCrashSweep } from "./crash-retention.js";

mongoRetentionCrashSweep("sqlite");
