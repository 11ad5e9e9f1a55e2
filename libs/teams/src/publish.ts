/**
 * Publishing a team follows @troupe/storage's commit protocol (manifest.ts), with the team manifest
 * as the manifest:
 *  1. claim the version: `claim.json` with putIfAbsent — of two publishers only one gets a version
 *     number, the other moves on to the next one (or, when it asked for that exact version, is
 *     refused). The claim plays the part of a run's attempt id: no two publishers share a key;
 *  2. write the artifacts (each policy's files) under the version's folder;
 *  3. write `manifest.json` LAST with putIfAbsent. The version is visible from that instant, never
 *     before, and is never rewritten. A publisher that dies in step 2 leaves a claimed version
 *     without a manifest: readers never see it, and later versions skip its number.
 */
import { type ObjectStore, sha256Hex } from "@troupe/storage";
import { checkAlias, jsonBytes, setAlias } from "./aliases.ts";
import { artifactKey, claimKey, manifestKey } from "./layout.ts";
import {
  type EvalSummary,
  encodeTeamManifest,
  type OnnxGraphInfo,
  parseTeamManifest,
  type ServedSampling,
  TEAM_MANIFEST_SCHEMA_VERSION,
  type TeamManifest,
} from "./manifest.ts";
import { checkName, versionsOf } from "./versions.ts";

export interface PublishPolicyInput {
  /** The policy's files: config.json, model.safetensors, tokenizer files, model.onnx (optional). */
  readonly files: Readonly<Record<string, Uint8Array>>;
  readonly model: string;
  readonly parameters: number;
  readonly sampling: ServedSampling;
  readonly onnx?: OnnxGraphInfo | undefined;
}

export interface PublishInput {
  readonly name: string;
  readonly environment: TeamManifest["environment"];
  readonly team: TeamManifest["team"];
  readonly roles: TeamManifest["roles"];
  readonly policies: Readonly<Record<string, PublishPolicyInput>>;
  readonly eval?: EvalSummary | undefined;
  readonly source: TeamManifest["source"];
  /** Take exactly this version; refused with `PublishConflictError` when it is taken. Default: the next free one. */
  readonly version?: number | undefined;
  /** Point this alias at the new version once it is published. */
  readonly alias?: string | undefined;
}

/** Two publishers wanted the same version; the one that asked for it explicitly is refused. */
export class PublishConflictError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PublishConflictError";
  }
}

/** Attempts at claiming the next free version before giving up (each loss means another publisher won one). */
const MAX_CLAIM_ATTEMPTS = 32;

/** Each policy's manifest entry: its files' checksums and sizes, its model and sampling. */
async function policyEntries(input: PublishInput): Promise<TeamManifest["policies"]> {
  const policies: TeamManifest["policies"] = {};
  for (const [policyId, p] of Object.entries(input.policies)) {
    const files: Record<string, { sha256: string; bytes: number }> = {};
    for (const [file, bytes] of Object.entries(p.files)) {
      files[file] = { sha256: await sha256Hex(bytes), bytes: bytes.byteLength };
    }
    policies[policyId] = {
      files,
      model: p.model,
      parameters: p.parameters,
      sampling: p.sampling,
      ...(p.onnx !== undefined ? { onnx: p.onnx } : {}),
    };
  }
  return policies;
}

/** Step 1: a version number of our own (the asked one, or the next free). */
async function claimVersion(store: ObjectStore, input: PublishInput): Promise<number> {
  for (let attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
    const candidate = input.version ?? (await versionsOf(store, input.name)).highestTaken + 1;
    const claim = jsonBytes({ name: input.name, version: candidate, claimedAt: new Date().toISOString() });
    if (await store.putIfAbsent(claimKey(input.name, candidate), claim)) return candidate;
    if (input.version !== undefined) {
      throw new PublishConflictError(`team "${input.name}" v${candidate} is already taken`);
    }
  }
  throw new PublishConflictError(
    `team "${input.name}": lost the race for a version ${MAX_CLAIM_ATTEMPTS} times; try again`,
  );
}

/** Publishes a new version (see the file comment for the protocol); returns its manifest. */
export async function publishTeam(store: ObjectStore, input: PublishInput): Promise<TeamManifest> {
  checkName(input.name);
  if (input.alias !== undefined) checkAlias(input.alias);
  const policies = await policyEntries(input);
  const draft = (version: number): TeamManifest =>
    parseTeamManifest(
      {
        schemaVersion: TEAM_MANIFEST_SCHEMA_VERSION,
        name: input.name,
        version,
        createdAt: new Date().toISOString(),
        environment: input.environment,
        team: input.team,
        roles: input.roles,
        policies,
        ...(input.eval !== undefined ? { eval: input.eval } : {}),
        source: input.source,
      },
      `publish ${input.name}`,
    );
  draft(input.version ?? 1); // refuse an invalid manifest before writing anything

  const version = await claimVersion(store, input);
  for (const [policyId, p] of Object.entries(input.policies)) {
    for (const [file, bytes] of Object.entries(p.files)) {
      await store.put(artifactKey(input.name, version, policyId, file), bytes);
    }
  }
  const manifest = draft(version);
  if (!(await store.putIfAbsent(manifestKey(input.name, version), encodeTeamManifest(manifest)))) {
    throw new PublishConflictError(`team "${input.name}" v${version}: a manifest already exists`);
  }
  if (input.alias !== undefined) await setAlias(store, input.name, input.alias, version);
  return manifest;
}
