import { qwenWeightNames } from "@troupe/engine";
import { describe, expect, it } from "vitest";
import { Graph } from "../../src/graph/builder.ts";
import { fusedData, graphWeightSpecs } from "../../src/model/fused-weights.ts";
import { queryWindow } from "../../src/model/query-window.ts";
import { modelWeights, weightConstants, weightInputs } from "../../src/model/weights.ts";
import { runGraph, TINY_CONFIGS, tinyWeights, toFloat64 } from "../fixtures.ts";
import { uniformStream } from "../gradcheck.ts";

const config = TINY_CONFIGS["qwen3 untied, biases, head_dim 6, MHA"]!;
const d = config.hidden_size;

describe("model weights", () => {
  it("fused and separate projections give the same q, k, v and gate, up (and the window's own queries)", async () => {
    const weights = toFloat64(tinyWeights(config, 4));
    const graph = new Graph("projections");
    const separate = modelWeights(
      config,
      weightInputs(graph, graphWeightSpecs(config, false), "float64"),
      false,
    );
    const fusedSpecs = graphWeightSpecs(config, true).map((s) => ({ ...s, name: `fused:${s.name}` }));
    const fusedValues = weightInputs(graph, fusedSpecs, "float64");
    const fused = modelWeights(
      config,
      new Map([...fusedValues].map(([name, v]) => [name.slice("fused:".length), v])),
      true,
    );
    const h = graph.input("h", "float64", ["N", d]);
    const ids = graph.input("ids", "int64", ["B", "T"]);
    const window = queryWindow(ids, graph.ints([2]));
    const outputs = (layer: (typeof separate.layers)[number], tag: string) => {
      const [q, k, v] = layer.qkv(h);
      const [gate, up] = layer.gateUp(h);
      const [qWindow] = layer.qkv(h, window.rows);
      for (const [name, value] of Object.entries({ q, k, v, gate, up, qWindow }))
        graph.output(value, `${tag}:${name}`);
    };
    outputs(separate.layers[1]!, "separate");
    outputs(fused.layers[1]!, "fused");
    const rand = uniformStream(2);
    const feeds: Record<string, { data: Float64Array | BigInt64Array; dims: readonly number[] }> = {
      h: { data: Float64Array.from({ length: 6 * d }, () => rand() - 0.5), dims: [6, d] },
      ids: { data: new BigInt64Array(6), dims: [2, 3] },
    };
    for (const spec of graphWeightSpecs(config, false))
      feeds[spec.name] = { data: weights.get(spec.name)!.data as Float64Array, dims: spec.shape };
    for (const spec of fusedSpecs) {
      const name = spec.name.slice("fused:".length);
      const data = spec.group ? fusedData(spec.group, weights) : weights.get(name)!.data;
      feeds[spec.name] = { data: data as Float64Array, dims: spec.shape };
    }
    const out = await runGraph(graph, feeds);
    for (const name of ["q", "k", "v", "gate", "up", "qWindow"]) {
      const a = out[`separate:${name}`]!;
      const b = out[`fused:${name}`]!;
      expect(a.length, name).toBe(b.length);
      a.forEach((x, i) => expect(x as number).toBeCloseTo(b[i] as number, 12));
    }
    // The window keeps the last 2 of each row's 3 columns: 4 of the 6 rows.
    expect(out["separate:qWindow"]!.length).toBe(4 * config.num_attention_heads * config.head_dim);
  });

  it("the head is the embedding when tied; a missing weight is named", () => {
    const tied = TINY_CONFIGS["qwen3 tied, q/k-norm, GQA"]!;
    const graph = new Graph("tied");
    const w = modelWeights(tied, weightInputs(graph, graphWeightSpecs(tied, false), "float32"), false);
    expect(w.head).toBe(w.embed);
    expect(w.layers[0]!.qNorm).toBeDefined();
    const untied = modelWeights(
      config,
      weightInputs(new Graph("u"), graphWeightSpecs(config, false), "float32"),
      false,
    );
    expect(untied.head.name).toBe("lm_head.weight");
    const values = weightInputs(new Graph("m"), graphWeightSpecs(config, false), "float32");
    values.delete("model.layers.1.mlp.down_proj.weight");
    expect(() => modelWeights(config, values, false)).toThrow(
      "decoder: missing weight model.layers.1.mlp.down_proj.weight",
    );
  });

  it("baked weights are constants of the graph's dtype; a weight of another dtype is named", () => {
    const weights = tinyWeights(config, 1);
    const graph = new Graph("baked");
    const specs = graphWeightSpecs(config, true);
    const constants = weightConstants(graph, specs, weights, "float32");
    expect([...constants.keys()]).toEqual(specs.map((s) => s.name));
    expect(graph.inputs).toEqual([]);
    expect(specs.length).toBeLessThan(qwenWeightNames(config).length);
    expect(() => weightConstants(new Graph("g"), specs, weights, "float64")).toThrow(
      "graph g: weight model.embed_tokens.weight is not float64",
    );
  });
});
