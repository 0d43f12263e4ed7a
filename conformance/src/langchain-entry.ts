// The test file the CLI hands to vitest to run LangChain's validation suite: vitest offers no way to
// run a suite from a function, so the CLI passes the user's module path through `provide`.
import { pathToFileURL } from "node:url";
import { describe, inject } from "vitest";

import { registerLangchainValidation } from "./langchain.js";
import { toTarget } from "./subject.js";

declare module "vitest" {
  interface ProvidedContext {
    RESUMABLE_CONFORMANCE: { modulePath: string; name: string };
  }
}

const { modulePath, name } = inject("RESUMABLE_CONFORMANCE");

// An async suite factory rather than a top-level await, which the CommonJS build cannot emit.
describe(`LangChain validation: ${name}`, async () => {
  const target = toTarget(await import(pathToFileURL(modulePath).href), modulePath);
  registerLangchainValidation(target, name);
});
