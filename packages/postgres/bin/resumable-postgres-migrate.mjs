#!/usr/bin/env node
// Runs @resumable/postgres migrations ahead of a deploy:
//   resumable-postgres-migrate [--schema NAME] [postgres://user:pass@host:5432/db]
// The URL defaults to $DATABASE_URL. Safe to run while other processes migrate or serve.
import { PostgresStore, SCHEMA_VERSION } from "@resumable/postgres";

const args = process.argv.slice(2);
let schema;
let url;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === "--help" || arg === "-h") {
    console.log("Usage: resumable-postgres-migrate [--schema NAME] [URL]\nURL defaults to $DATABASE_URL; NAME to \"public\".");
    process.exit(0);
  } else if (arg === "--schema") schema = args[++i];
  else if (arg.startsWith("--schema=")) schema = arg.slice("--schema=".length);
  else url = arg;
}
url ??= process.env.DATABASE_URL;
if (!url) {
  console.error("resumable-postgres-migrate: no database URL. Pass one, or set DATABASE_URL.");
  process.exit(2);
}
try {
  await PostgresStore.migrate(url, { schema, pool: { max: 1 } });
  console.log(`@resumable/postgres: schema "${schema ?? "public"}" is at version ${SCHEMA_VERSION}.`);
} catch (error) {
  console.error(`resumable-postgres-migrate: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
