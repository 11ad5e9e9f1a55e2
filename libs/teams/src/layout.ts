/**
 * Where published teams live in an ObjectStore (relative to the store's root):
 *
 *   teams/<name>/versions/<00000001>/claim.json            who took the version (putIfAbsent, first)
 *   teams/<name>/versions/<00000001>/<policyId>/<file>     config.json, model.safetensors, model.onnx, tokenizer…
 *   teams/<name>/versions/<00000001>/manifest.json         written last, putIfAbsent: the version exists from then on
 *   teams/<name>/aliases/<alias>.json                      {version, history} — movable
 */
import { MANIFEST, pad, STEP_DIGITS } from "@troupe/storage";

export const TEAMS_PREFIX = "teams/";
export const MANIFEST_FILE = MANIFEST;
export const CLAIM_FILE = "claim.json";

export const teamPrefix = (name: string) => `${TEAMS_PREFIX}${name}/`;
export const versionsPrefix = (name: string) => `${teamPrefix(name)}versions/`;
export const aliasesPrefix = (name: string) => `${teamPrefix(name)}aliases/`;
/** Versions are padded like a run's steps (storage's `pad`), so keys sort in numeric order. */
export const versionFolder = (name: string, version: number) => `${versionsPrefix(name)}${pad(version)}`;
export const manifestKey = (name: string, version: number) =>
  `${versionFolder(name, version)}/${MANIFEST_FILE}`;
export const claimKey = (name: string, version: number) => `${versionFolder(name, version)}/${CLAIM_FILE}`;
export const artifactKey = (name: string, version: number, policyId: string, file: string) =>
  `${versionFolder(name, version)}/${policyId}/${file}`;
export const aliasKey = (name: string, alias: string) => `${aliasesPrefix(name)}${alias}.json`;

const VERSION_KEY = new RegExp(`^teams/([^/]+)/versions/(\\d{${STEP_DIGITS}})/([^/]+)$`);

/** Parses `teams/<name>/versions/<digits>/<file>` into its parts (undefined for any other key). */
export function parseVersionKey(key: string): { name: string; version: number; file: string } | undefined {
  const m = VERSION_KEY.exec(key);
  return m ? { name: m[1]!, version: Number(m[2]), file: m[3]! } : undefined;
}
