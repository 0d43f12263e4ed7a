import { packageConfig } from "../vitest.shared.js";

export default packageConfig("conformance", { globals: true, testTimeout: 120_000 });
