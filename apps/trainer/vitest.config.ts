import { s3Config } from "../../vitest.shared.ts";

export default s3Config;
