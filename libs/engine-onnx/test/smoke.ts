import { tinyQwenConfig, initQwenWeights } from "@troupe/engine";
import { buildTrainGraph, buildScoringGraph, buildDecodeGraph } from "../src/model/graphs.ts";
import { GraphSession } from "../src/graph/session.ts";
const config = tinyQwenConfig();
for (const dtype of ["float32", "float64"] as const) {
  for (const b of [buildScoringGraph, buildDecodeGraph, buildTrainGraph]) {
    const g = b(config, dtype);
    const t0 = performance.now();
    const s = await GraphSession.create(g);
    console.log(dtype, g.name, g.nodes.length, "nodes", (performance.now() - t0).toFixed(0), "ms");
  }
}
