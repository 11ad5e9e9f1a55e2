/**
 * Reverse-mode differentiation over the builder's tape.
 *
 * The tape lists every differentiable node in the order it was built (a topological order). To get
 * ∂loss/∂w for the wanted values w: seed ∂loss/∂loss = 1, walk the tape backwards, and for each node
 * whose outputs received a gradient call its rule, which emits the nodes computing its inputs'
 * gradients; gradients of a value used several times are summed. Only values on a path from a
 * wanted input to the loss ask for gradients (`needed`), so masks, positions and constants cost
 * nothing. The backward nodes are appended to the same graph, so one ONNX session runs forward
 * and backward together and ORT frees each activation after its last use.
 */
import type { Value } from "./builder.ts";
import { add, scalarLike } from "./ops.ts";

export function gradients(loss: Value, wrt: readonly Value[], seed?: Value): Value[] {
  const graph = loss.graph;
  if (loss.shape.length !== 0 && seed === undefined) {
    throw new Error(`gradients: loss ${loss.name} must be a scalar (shape [${loss.shape}]) or a seed given`);
  }
  return graph.untaped(() => {
    // Which values depend on a wanted input (forward pass over the tape).
    const dependsOnWrt = new Set(wrt.map((v) => v.name));
    for (const entry of graph.tape) {
      if (entry.inputs.some((v) => dependsOnWrt.has(v.name))) {
        for (const out of entry.outputs) dependsOnWrt.add(out.name);
      }
    }
    if (!dependsOnWrt.has(loss.name)) {
      throw new Error(`gradients: loss ${loss.name} does not depend on any of the wanted values`);
    }
    const grads = new Map<string, Value>();
    grads.set(loss.name, seed ?? scalarLike(loss, 1));
    const accumulate = (v: Value, g: Value) => {
      const prev = grads.get(v.name);
      grads.set(v.name, prev === undefined ? g : add(prev, g));
    };
    for (let i = graph.tape.length - 1; i >= 0; i--) {
      const entry = graph.tape[i]!;
      const outGrads = entry.outputs.map((o) => grads.get(o.name));
      if (outGrads.every((g) => g === undefined)) continue;
      const needed = entry.inputs.map((v) => dependsOnWrt.has(v.name));
      if (!needed.some(Boolean)) continue;
      if (entry.grad === undefined) {
        throw new Error(`gradients: op ${entry.opType} (${entry.outputs[0]?.name}) has no gradient rule`);
      }
      const inGrads = entry.grad(outGrads, needed);
      entry.inputs.forEach((v, j) => {
        const g = inGrads[j];
        if (g !== undefined && needed[j]) accumulate(v, g);
      });
    }
    return wrt.map((w) => {
      const g = grads.get(w.name);
      if (g === undefined) throw new Error(`gradients: no gradient reaches ${w.name}`);
      return g;
    });
  });
}
