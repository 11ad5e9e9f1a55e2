/**
 * An inference backend turns a published policy into a core `Policy` (prompts in, completions
 * out). Two exist: the embedded ONNX engine (`@troupe/teams/onnx`, Node only) and any
 * OpenAI-compatible server (`createOpenAIBackend`, Node and Workers).
 */
import type { Completion, GenerationRequest, Policy, SamplingParams } from "@troupe/core";
import type { TeamManifest } from "./manifest.ts";
import type { TeamRegistry } from "./registry.ts";

/**
 * The backend has more generations waiting than it accepts (its bounded queue is full): the
 * caller should retry after `retryAfterSeconds` (a server answers 503 with Retry-After).
 */
export class BackendOverloadedError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds = 1,
  ) {
    super(message);
    this.name = "BackendOverloadedError";
  }
}

export interface GenerateCallOptions {
  /** Stops waiting (for a pool slot, a server) once aborted. */
  readonly signal?: AbortSignal | undefined;
}

/** A core Policy whose generate also takes an AbortSignal (optional third argument). */
export interface ServingPolicy extends Policy {
  generate(
    requests: readonly GenerationRequest[],
    sampling: SamplingParams,
    options?: GenerateCallOptions,
  ): Promise<Completion[]>;
}

export type ServingPolicySet = Readonly<Record<string, ServingPolicy>>;

export interface InferenceBackend {
  /** "torch": the published weights held by a PyTorch worker engine (for teams too big for the CPU). */
  readonly name: "onnx" | "openai" | "torch";
  /**
   * The manifest's policies, ready to generate. What a backend loads for them (the ONNX engines)
   * stays loaded until `unload` of that version, or `close`: a server decides what to keep in its
   * one cache of loaded teams, not the backend.
   */
  policies(manifest: TeamManifest, registry: TeamRegistry): Promise<ServingPolicySet>;
  /**
   * Undoes one `policies` call of this team version: what no other call still holds is freed, and
   * the policies that call returned must not generate after.
   */
  unload?(manifest: TeamManifest): Promise<void>;
  close?(): Promise<void>;
}
