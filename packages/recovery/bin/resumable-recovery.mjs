#!/usr/bin/env node
// resumable-recovery <command>: see `resumable-recovery --help` (src/cli.ts).
import { main } from "../dist/esm/cli.js";

process.exit(await main(process.argv.slice(2)));
