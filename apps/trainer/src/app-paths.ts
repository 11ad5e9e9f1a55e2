/**
 * Where the trainer app and the workspace are on disk, found from this file's place
 * (apps/trainer/src/). It is the one module that derives folders from `import.meta.url`, and it
 * sits at the top of src/, so a one-file bundle of the trainer placed in src/ (docs/gpu.md) finds
 * the recipes and the workspace root as the sources do.
 */
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** apps/trainer: its recipes/ and sweeps/. */
export const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The workspace root: relative `file://` stores and a recipe's relative paths start here. */
export const workspaceRoot = resolve(appRoot, "../..");
