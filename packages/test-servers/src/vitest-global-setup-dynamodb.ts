/**
 * A vitest `globalSetup` that starts both DynamoDB emulators once for the whole run, dynalite (in
 * vitest's main process) and moto's server, unless an endpoint variable names them, and provides
 * their endpoints to every test file, where {@link getDynamoDb} picks them up.
 *
 * ```ts
 * config.test.globalSetup = [fileURLToPath(new URL("../test-servers/src/vitest-global-setup-dynamodb.ts", import.meta.url))];
 * ```
 *
 * @module
 */
import {
  DYNALITE_ENDPOINT_ENV,
  DYNAMODB_ENDPOINT_ENV,
  DYNAMODB_PROVIDE_KEYS,
  MOTO_ENDPOINT_ENV,
  startDynamoDb,
  type DynamoDbEmulator,
} from "./dynamodb.js";
import { provideSharedServers, type ProvidingProject } from "./global-setup.js";

declare module "vitest" {
  interface ProvidedContext {
    resumableDynaliteEndpoint: string;
    resumableMotoEndpoint: string;
  }
}

const endpointEnv: Record<DynamoDbEmulator, string> = { dynalite: DYNALITE_ENDPOINT_ENV, moto: MOTO_ENDPOINT_ENV };

export default function setup(project: ProvidingProject): Promise<() => Promise<void>> {
  return provideSharedServers(
    project,
    (["dynalite", "moto"] as const).map((emulator) => ({
      key: DYNAMODB_PROVIDE_KEYS[emulator],
      env: [endpointEnv[emulator], DYNAMODB_ENDPOINT_ENV],
      async start() {
        const server = await startDynamoDb(emulator);
        return { value: server.endpoint, stop: () => server.stop() };
      },
    })),
  );
}
