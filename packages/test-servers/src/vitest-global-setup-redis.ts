/**
 * A vitest `globalSetup` that starts one standalone Redis and one three-node Redis Cluster for the
 * whole run (unless `RESUMABLE_REDIS_URL` / `RESUMABLE_REDIS_CLUSTER_NODES` name them) and provides
 * where they are to every test file, where {@link getRedis} and {@link getRedisCluster} pick them up.
 * Fault tests that kill a server start their own with `startDisposableRedis()`.
 *
 * ```ts
 * config.test.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup-redis.ts", import.meta.url))];
 * ```
 *
 * @module
 */
import { provideSharedServers, type ProvidingProject } from "./global-setup.js";
import {
  REDIS_CLUSTER_NODES_ENV,
  REDIS_CLUSTER_PROVIDE_KEY,
  REDIS_PROVIDE_KEY,
  REDIS_URL_ENV,
  formatRedisClusterNodes,
  startRedis,
  startRedisCluster,
} from "./redis.js";

declare module "vitest" {
  interface ProvidedContext {
    resumableRedisUrl: string;
    resumableRedisClusterNodes: string;
  }
}

export default function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  return provideSharedServers(project, [
    {
      key: REDIS_PROVIDE_KEY,
      env: [REDIS_URL_ENV],
      async start() {
        // Shared, so never killed: no persistence (an AOF would cost an fsync per write).
        const server = await startRedis();
        return { value: server.url, stop: () => server.stop() };
      },
    },
    {
      key: REDIS_CLUSTER_PROVIDE_KEY,
      env: [REDIS_CLUSTER_NODES_ENV],
      async start() {
        const cluster = await startRedisCluster();
        return { value: formatRedisClusterNodes(cluster.nodes), stop: () => cluster.stop() };
      },
    },
  ]);
}
