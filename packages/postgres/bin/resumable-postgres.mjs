#!/usr/bin/env node
// resumable-postgres <command>: see `resumable-postgres --help` (src/cli.ts).
import { main } from "../dist/esm/cli.js";

process.exit(await main(process.argv.slice(2)));
