/**
 * What every vitest global setup of this package does: start the servers of one kind once for the
 * whole run, `provide` where they are to the test files, and stop them at the end.
 *
 * @module
 */
import { inCi } from "./common.js";

/** Minimal view of vitest's `TestProject` (kept structural so these files load without vitest's node types). */
export interface ProvidingProject {
  provide(key: string, value: string): void;
}

/** One server to share: skipped when one of `env` is set (test files then use that). */
export interface SharedServer {
  /** The key test files read with `inject`. */
  key: string;
  /** Variables that, when set, name a server to use instead (test files read them themselves). */
  env: string[];
  /** Starts the server; resolves the value to provide and how to stop it. */
  start(): Promise<{ value: string; stop(): Promise<void> }>;
}

/**
 * Starts `servers` (concurrently), provides each one's value, and returns the teardown. A server that
 * cannot start fails the run under `CI=true`; elsewhere it is left out, and the test files' `find*()`
 * resolve `undefined` (after trying once more themselves).
 */
export async function provideSharedServers(project: ProvidingProject, servers: SharedServer[]): Promise<() => Promise<void>> {
  const wanted = servers.filter((server) => !server.env.some((name) => process.env[name]));
  const results = await Promise.allSettled(wanted.map((server) => server.start()));
  const stops: Array<() => Promise<void>> = [];
  const errors: unknown[] = [];
  results.forEach((result, i) => {
    if (result.status === "fulfilled") {
      project.provide(wanted[i]!.key, result.value.value);
      stops.push(() => result.value.stop());
    } else {
      errors.push(result.reason);
    }
  });
  const teardown = async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
  };
  if (errors.length > 0 && inCi()) {
    await teardown();
    throw errors[0];
  }
  return teardown;
}
