import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("core", { globals: true });
