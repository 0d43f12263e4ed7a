import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("redis", { globals: true, testTimeout: 60_000 });
