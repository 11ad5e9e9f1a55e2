/**
 * The query window: the number W (int64 [1]) of trailing columns whose outputs are wanted —
 * scoring and training of left-padded sequences (the columns that predict completion tokens), or
 * the last column of a prefill. The last layer then runs its queries, attention output, MLP and
 * the final norm on those columns only; its keys and values still cover every column. No other
 * column's output feeds the kept ones in the last layer, so theirs are the same numbers.
 */
import type { Value } from "../graph/builder.ts";
import * as op from "../graph/ops.ts";
import { biasForStackedHeads } from "./attention.ts";
import { DIM, shapeVector } from "./dims.ts";

export interface QueryWindow {
  /** Rows [B·T, width] → the window's rows [B·W, width]. */
  readonly rows: (x: Value, width: number) => Value;
  /** A [B, T, …] host input (RoPE tables) → [B, W, …]. */
  readonly columns: (t: Value) => Value;
  /** The run-time shape [B, W, n, D] of the window's heads. */
  readonly heads: (n: number, D: number) => Value;
  /** The attention bias [B, 1, 1, T, S] of the W query columns, for G stacked heads. */
  readonly bias: (attnBias: Value, G: number) => Value;
}

/** The trailing W columns of a [B, T, …] batch (ids [B, T]). */
export function queryWindow(ids: Value, W: Value): QueryWindow {
  const graph = ids.graph;
  const B = DIM.batch;
  return {
    rows(x, d) {
      const byBatch = op.reshape(x, shapeVector(graph, [[ids, 0], [ids, 1], d]), [B, DIM.time, d]);
      return op.reshape(op.trailing(byBatch, 1, W, [B, "W", d]), graph.ints([-1, d]), [DIM.rows, d]);
    },
    columns(t) {
      return graph.untaped(() => op.trailing(t, 1, W, [B, "W", ...t.shape.slice(2)]));
    },
    heads(n, D) {
      return graph.untaped(() => op.concat([shapeVector(graph, [[ids, 0]]), W, graph.ints([n, D])], 0));
    },
    bias(attnBias, G) {
      const rows = graph.untaped(() => op.trailing(attnBias, 3, W, [B, 1, 1, "W", attnBias.shape[4]!]));
      return biasForStackedHeads(rows, G);
    },
  };
}
