import { mongoCrashSuite } from "./crash.js";

mongoCrashSuite("sqlite");
