/**
 * A vitest `globalSetup` that starts FerretDB once for the whole run with each handler, SQLite and
 * PostgreSQL (the latter on a database of the PostgreSQL test server: list the PostgreSQL global
 * setup first to share its server), unless `RESUMABLE_MONGODB_URL` names a server, and provides them
 * to every test file, where {@link getMongoDb} picks them up.
 *
 * ```ts
 * config.test.globalSetup = [
 *   fileURLToPath(new URL("../test-servers/src/vitest-global-setup.ts", import.meta.url)),
 *   fileURLToPath(new URL("../test-servers/src/vitest-global-setup-mongodb.ts", import.meta.url)),
 * ];
 * ```
 *
 * @module
 */
import { provideSharedServers, type ProvidingProject } from "./global-setup.js";
import { MONGODB_PROVIDE_KEYS, MONGODB_URL_ENV, provideMongoDbValue, startMongoDb } from "./mongodb.js";

declare module "vitest" {
  interface ProvidedContext {
    resumableFerretDbSqlite: string;
    resumableFerretDbPostgresql: string;
  }
}

export default function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  return provideSharedServers(
    project,
    (["sqlite", "postgresql"] as const).map((handler) => ({
      key: MONGODB_PROVIDE_KEYS[handler],
      env: [MONGODB_URL_ENV],
      async start() {
        const server = await startMongoDb(handler);
        return { value: provideMongoDbValue(server), stop: () => server.stop() };
      },
    })),
  );
}
