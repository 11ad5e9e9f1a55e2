/**
 * A real tiny team for the tests: two freshly initialised Qwen3 policies (hidden 32, one layer)
 * with the byte tokenizer, saved as checkpoint files by the ONNX engine and published for
 * Plan-Path (compact roles: planner then fixer) on 4×4 grids.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tinyQwenConfig } from "@troupe/engine";
import { createOnnxEngine } from "@troupe/engine-onnx";
import { FileStore } from "@troupe/storage/node";
import { checkpointSummary, type PublishInput, servingFiles } from "../src/index.ts";
import { exportDecodeGraph } from "../src/onnx-export.ts";

export const tinyConfig = tinyQwenConfig({
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 16,
  max_position_embeddings: 512,
});

export const planPathEnvironment = {
  name: "plan-path",
  options: { roles: "compact", maxTurns: 2, rows: 4, cols: 4, blockedFraction: 0.1, minPathLength: 2 },
};

export async function tinyCheckpoint(
  policyId: string,
  seed: number,
  config = tinyConfig,
): Promise<Record<string, Uint8Array>> {
  const engine = await createOnnxEngine({ policies: [{ id: policyId, config, seed }] });
  const files = await engine.save(policyId);
  await engine.close();
  return { ...files };
}

export interface TinyTeamOptions {
  /** The planner's weights seed; the fixer's is seed + 1. */
  readonly seed?: number;
  /** Publish each policy's ONNX decode graph (an "embedded" team). Default true. */
  readonly onnx?: boolean;
  /** The served sampling temperature (0: greedy). Default 1. */
  readonly temperature?: number;
  readonly environment?: PublishInput["environment"];
  /** The run id recorded as the team's source. */
  readonly runId?: string;
  /** The two roles' ids, each with a policy of its own named alike (default planner, fixer). */
  readonly roles?: readonly [string, string];
  /** max_position_embeddings of both models (default 512; prompts of the tool roles are longer). */
  readonly maxPositions?: number;
}

/**
 * The publish input of the tiny planner+fixer team. The api and eval suites use it too (their
 * fixtures import this file), so every suite serves the same kind of team.
 */
export async function tinyTeamInput(name: string, options: TinyTeamOptions = {}): Promise<PublishInput> {
  const { seed = 1, onnx = true, temperature = 1, roles = ["planner", "fixer"] } = options;
  const modelConfig =
    options.maxPositions === undefined
      ? tinyConfig
      : { ...tinyConfig, max_position_embeddings: options.maxPositions };
  const policies: Record<string, PublishInput["policies"][string]> = {};
  for (const [i, policyId] of roles.entries()) {
    const files = servingFiles(await tinyCheckpoint(policyId, seed + i, modelConfig));
    const { model, parameters, config } = checkpointSummary(files);
    const graph = onnx ? exportDecodeGraph(config) : undefined;
    policies[policyId] = {
      files: graph ? { ...files, [graph.info.file]: graph.bytes } : files,
      model,
      parameters,
      sampling: { temperature, topP: 1, maxTokens: 8 },
      ...(graph ? { onnx: graph.info } : {}),
    };
  }
  return {
    name,
    environment: options.environment ?? planPathEnvironment,
    team: { specialisation: "per-role" },
    roles: roles.map((id) => ({ id, policy: id })),
    policies,
    source: { runId: options.runId ?? "fixture", step: 0 },
  };
}

/** A FileStore in a fresh temp folder, removed by `cleanup`. */
export function tempStore(): { store: FileStore; root: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), "troupe-teams-"));
  return { store: new FileStore(root), root, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}
