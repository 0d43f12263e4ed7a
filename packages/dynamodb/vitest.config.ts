import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("dynamodb", { globals: true, testTimeout: 60_000 });
