import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("example-review-queue", { testTimeout: 120_000 });
