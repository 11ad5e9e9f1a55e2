/** The symbolic dimensions of the model graphs, and run-time shape vectors built from them. */
import type { Graph, Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";

/** Symbolic dimension names of the model graphs. */
export const DIM = { batch: "B", time: "T", past: "P", total: "S", rows: "N" } as const;

/** Runtime int64 shape vector from pieces: numbers, or [value, axis] = that value's dim. */
export function shapeVector(graph: Graph, parts: readonly (number | readonly [Value, number])[]): Value {
  return graph.untaped(() => {
    const pieces = parts.map((p) => {
      if (typeof p === "number") return graph.ints([p]);
      const [v, axis] = p;
      return op.slice(op.shapeOf(v), 0, axis, axis + 1, [1]);
    });
    return pieces.length === 1 ? pieces[0]! : op.concat(pieces, 0);
  });
}
