/**
 * `loadTeam`: a manifest made runnable — its environment built through the @troupe/envs registry
 * (with the manifest's options, exactly as the trainer built it from the recipe), its team through
 * `configuredTeam` (the recipe's specialisation and turn overrides), and its policies from a backend.
 */
import { type ChatMessage, type SamplingParams, samplingParams, type Team } from "@troupe/core";
import { loadTokenizer, parseModelConfig, TOKENIZER_FILES } from "@troupe/engine";
import { configuredTeam, createEnvironment, type RegisteredEnvironment } from "@troupe/envs/registry";
import type { CodeRunner } from "@troupe/sandbox";
import type { InferenceBackend, ServingPolicySet } from "./backend.ts";
import { ManifestError, type TeamManifest } from "./manifest.ts";
import type { TeamRegistry } from "./registry.ts";
import { checkModuleLoaded, needsSandbox, UnsupportedTeamError } from "./sandbox.ts";

export interface LoadedTeam {
  readonly manifest: TeamManifest;
  readonly environment: RegisteredEnvironment;
  readonly team: Team;
  readonly policies: ServingPolicySet;
  /** Each policy's default sampling (the manifest's). */
  readonly sampling: Readonly<Record<string, SamplingParams>>;
  /** The roles that sample differently from their policy: role id → its sampling (the manifest's). */
  readonly roleSampling?: Readonly<Record<string, SamplingParams>>;
  readonly backend: InferenceBackend["name"];
  /**
   * Per policy: its model's context and its prompt length, so `solve` refuses a task whose prompt
   * the model cannot read before generating anything. Absent for teams built by hand (no check).
   */
  readonly contexts?: Readonly<Record<string, PolicyContext>>;
}

/** What a policy's model can read: its context, and the length of a prompt in its own tokens. */
export interface PolicyContext {
  /** `max_position_embeddings` of the policy's config.json: prompt and completion share it. */
  readonly maxPositions: number;
  /** Tokens of the prompt the policy would see (its tokenizer and chat template). */
  promptTokens(messages: readonly ChatMessage[]): number;
}

/** A policy's context from its published config.json and tokenizer (both checksum-verified reads). */
export async function policyContext(
  registry: TeamRegistry,
  manifest: TeamManifest,
  policyId: string,
): Promise<PolicyContext> {
  const label = `team ${manifest.name} v${manifest.version} policy ${policyId}`;
  const configBytes = await registry.readFile(manifest, policyId, "config.json");
  let maxPositions: number;
  try {
    maxPositions = parseModelConfig(
      JSON.parse(new TextDecoder().decode(configBytes)),
    ).max_position_embeddings;
  } catch (error) {
    throw new ManifestError(`${label}: config.json: ${(error as Error).message}`, ["policies", policyId]);
  }
  const files: Record<string, Uint8Array> = {};
  for (const name of TOKENIZER_FILES) {
    if (manifest.policies[policyId]!.files[name] !== undefined) {
      files[name] = await registry.readFile(manifest, policyId, name);
    }
  }
  const tokenizer = loadTokenizer(files);
  return { maxPositions, promptTokens: (messages) => tokenizer.encodeChat(messages).length };
}

export interface LoadTeamOptions {
  /** The sandbox for environments that run agents' code; without one such teams are refused. */
  readonly runner?: CodeRunner | undefined;
}

export async function loadTeam(
  registry: TeamRegistry,
  manifest: TeamManifest,
  backend: InferenceBackend,
  options: LoadTeamOptions = {},
): Promise<LoadedTeam> {
  const label = `team ${manifest.name} v${manifest.version}`;
  checkModuleLoaded(manifest.environment, label);
  const envOptions: Record<string, unknown> = { ...manifest.environment.options };
  if (needsSandbox(manifest.environment)) {
    if (options.runner === undefined) {
      throw new UnsupportedTeamError(
        `${label}: environment "${manifest.environment.name}" runs the agents' code, and no sandbox is available here`,
      );
    }
    envOptions.runner = options.runner;
  }
  let environment: RegisteredEnvironment;
  try {
    environment = createEnvironment(manifest.environment.name, envOptions);
  } catch (error) {
    const message = (error as Error).message;
    const field = message.startsWith("environment.name")
      ? ["environment", "name"]
      : ["environment", "options"];
    throw new ManifestError(`${label}: ${message}`, field);
  }
  const team = configuredTeam(environment, manifest.team);
  // The manifest's roles are what was trained; the registry must still build the same team.
  const expected = team.roles.map((r) => `${r.id}→${r.policy}`).join(", ");
  const declared = manifest.roles.map((r) => `${r.id}→${r.policy}`).join(", ");
  if (expected !== declared) {
    throw new ManifestError(
      `${label}: roles are [${declared}], but environment "${environment.name}" with specialisation ` +
        `"${manifest.team.specialisation}" gives [${expected}]`,
      ["roles"],
    );
  }
  const policies = await backend.policies(manifest, registry);
  const sampling: Record<string, SamplingParams> = {};
  const contexts: Record<string, PolicyContext> = {};
  try {
    for (const [policyId, policy] of Object.entries(manifest.policies)) {
      sampling[policyId] = samplingParams(policy.sampling);
      contexts[policyId] = await policyContext(registry, manifest, policyId);
    }
  } catch (error) {
    await backend.unload?.(manifest); // nobody will hold this team: free its policies
    throw error;
  }
  const roleSampling: Record<string, SamplingParams> = {};
  for (const role of manifest.roles) {
    if (role.sampling !== undefined) roleSampling[role.id] = samplingParams(role.sampling);
  }
  return { manifest, environment, team, policies, sampling, roleSampling, backend: backend.name, contexts };
}
