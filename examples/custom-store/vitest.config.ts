import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("example-custom-store", { globals: true, testTimeout: 120_000 });
