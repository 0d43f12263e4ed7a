import { packageConfig } from "../../vitest.shared.js";

export default packageConfig("sqlite", { globals: true });
