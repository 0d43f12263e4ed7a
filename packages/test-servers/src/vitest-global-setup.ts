/**
 * A vitest `globalSetup` that starts one PostgreSQL server for the whole run (unless
 * `RESUMABLE_POSTGRES_URL` names one) and provides its URL to every test file, where
 * {@link getPostgres} picks it up. Wire it in a package's vitest config:
 *
 * ```ts
 * test: { globalSetup: [fileURLToPath(new URL("../test-servers/src/vitest-global-setup.ts", import.meta.url))] }
 * ```
 *
 * @module
 */
import { inCi } from "./common.js";
import { POSTGRES_PROVIDE_KEY, POSTGRES_URL_ENV, sharePostgresInThisProcess, startDisposablePostgres } from "./postgres.js";

declare module "vitest" {
  interface ProvidedContext {
    resumablePostgresUrl: string;
  }
}

/** Minimal view of vitest's `TestProject` (kept structural so this file loads without vitest/node types). */
interface ProvidingProject {
  provide(key: typeof POSTGRES_PROVIDE_KEY, value: string): void;
}

export default async function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  if (process.env[POSTGRES_URL_ENV]) return async () => {};
  try {
    const server = await startDisposablePostgres();
    project.provide(POSTGRES_PROVIDE_KEY, server.url);
    // Global setups listed after this one (MongoDB's, for FerretDB's PostgreSQL handler) reuse it.
    sharePostgresInThisProcess(server);
    return () => server.stop();
  } catch (error) {
    if (inCi()) throw error;
    // Outside CI, test files decide: findPostgres() resolves undefined and they may skip.
    return async () => {};
  }
}
