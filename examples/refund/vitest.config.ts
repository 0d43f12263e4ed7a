import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("example-refund", { testTimeout: 180_000 });
