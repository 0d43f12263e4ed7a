import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("mongodb", { globals: true, testTimeout: 60_000 });
