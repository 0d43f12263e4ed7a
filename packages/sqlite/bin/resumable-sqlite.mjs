#!/usr/bin/env node
// resumable-sqlite <command>: see `resumable-sqlite --help` (src/cli.ts).
import { main } from "../dist/esm/cli.js";

process.exit(await main(process.argv.slice(2)));
