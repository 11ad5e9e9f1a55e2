/**
 * A published version's artifacts, read back: every byte verified against the manifest (size and
 * sha256, storage's verifyBytes); a mismatch or a missing artifact is storage's IntegrityError
 * naming the object.
 */
import { getIfPresent, IntegrityError, type ObjectStore, verifyBytes } from "@troupe/storage";
import { artifactKey } from "./layout.ts";
import type { TeamManifest } from "./manifest.ts";
import { TeamNotFoundError } from "./versions.ts";

/** One artifact's bytes, verified; TeamNotFoundError naming the policies or files there are. */
export async function readTeamFile(
  store: ObjectStore,
  manifest: TeamManifest,
  policyId: string,
  file: string,
): Promise<Uint8Array> {
  const label = `team "${manifest.name}" v${manifest.version}`;
  const policy = manifest.policies[policyId];
  if (policy === undefined) {
    throw new TeamNotFoundError(
      `${label} has no policy "${policyId}" (policies: ${Object.keys(manifest.policies).join(", ")})`,
    );
  }
  const entry = policy.files[file];
  if (entry === undefined) {
    throw new TeamNotFoundError(
      `${label}, policy "${policyId}" has no file "${file}" (files: ${Object.keys(policy.files).sort().join(", ")})`,
    );
  }
  const key = artifactKey(manifest.name, manifest.version, policyId, file);
  const bytes = await getIfPresent(store, key);
  if (bytes === undefined) throw new IntegrityError(key, "missing (the manifest lists it)");
  return verifyBytes(key, bytes, { size: entry.bytes, sha256: entry.sha256 });
}

/** Every file of one policy, each verified, by file name. */
export async function readPolicyFiles(
  store: ObjectStore,
  manifest: TeamManifest,
  policyId: string,
): Promise<Record<string, Uint8Array>> {
  // An unknown policy: readTeamFile throws naming the known ones.
  if (manifest.policies[policyId] === undefined) await readTeamFile(store, manifest, policyId, "config.json");
  const files: Record<string, Uint8Array> = {};
  for (const file of Object.keys(manifest.policies[policyId]!.files).sort()) {
    files[file] = await readTeamFile(store, manifest, policyId, file);
  }
  return files;
}
