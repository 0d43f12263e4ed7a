import { mongoCrashSuite } from "./crash.js";

mongoCrashSuite("postgresql");
