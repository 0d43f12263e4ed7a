import { mongoCrashSuite } from "./crash.js";

// The full sweep runs on the PostgreSQL handler (crash-postgresql.test.ts); here CI samples the kill points.
mongoCrashSuite("sqlite", { sampledInCi: true });
