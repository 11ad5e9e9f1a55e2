/**
 * An ONNX Runtime session over a built graph, with the options that matter on a small CPU:
 * all graph optimisations (fusions such as Transpose+MatMul → FusedMatMul), a fixed thread count,
 * sequential execution. Feeds are plain typed arrays wrapped as ORT tensors without copying.
 */
import * as ort from "onnxruntime-node";
import type { DType, Graph } from "../graph/builder.ts";

/** Intra-op threads: the machine has 2 cores. */
export const DEFAULT_INTRA_OP_THREADS = 2;

export interface SessionOptions {
  readonly intraOpThreads?: number;
  /** Default: "all" for float32 graphs, "basic" for float64 ones (see defaultOptimization). */
  readonly optimization?: "disabled" | "basic" | "extended" | "all";
  /** Let idle ORT worker threads spin (default false: they sleep). */
  readonly allowSpinning?: boolean;
  /**
   * Serve the run's tensors from ORT's CPU arena (default false: plain malloc/free). The arena never
   * gives memory back while the session lives (the arena-shrinkage run option is not reachable from
   * onnxruntime-node), so a session keeps what its largest run took; without it a run's tensors
   * are malloc'd and freed, fresh pages each time (1.2–1.6× slower: a third of a short-sequence
   * run's CPU time went to page faults). The training, scoring and prefill sessions keep one,
   * bounded together by arena.ts (which releases a whole session when the bound needs the room);
   * the decode step — small, run once per token — always keeps one.
   */
  readonly memoryArena?: boolean;
  /** Write an ORT profile (JSON) in the working directory (default: env TROUPE_ORT_PROFILE=1). */
  readonly profile?: boolean;
}

export type TypedArray = Float32Array | Float64Array | BigInt64Array | Uint8Array;
export type FloatArray = Float32Array | Float64Array;

export class GraphSession {
  private constructor(
    readonly session: ort.InferenceSession,
    readonly inputNames: readonly string[],
    readonly outputNames: readonly string[],
  ) {}

  static async create(graph: Graph, options: SessionOptions = {}): Promise<GraphSession> {
    // TROUPE_ORT_PROFILE=1 profiles every session (`npm run bench:ort-profile` summarises the files).
    const profile = options.profile ?? process.env.TROUPE_ORT_PROFILE === "1";
    const session = await ort.InferenceSession.create(graph.toBytes(), {
      intraOpNumThreads:
        options.intraOpThreads ?? (Number(process.env.TROUPE_ORT_THREADS) || DEFAULT_INTRA_OP_THREADS),
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: options.optimization ?? defaultOptimization(graph),
      enableProfiling: profile,
      enableCpuMemArena: options.memoryArena ?? false,
      ...(profile ? { profileFilePrefix: "onnxruntime_profile" } : {}),
      // Spinning worker threads burn a core while waiting; on a shared 2-core machine that slows
      // everyone (ourselves included) down, so threads sleep between ops.
      extra: { session: { intra_op: { allow_spinning: options.allowSpinning ? "1" : "0" } } },
    });
    return new GraphSession(
      session,
      graph.inputs.map((v) => v.name),
      graph.outputs.map((v) => v.name),
    );
  }

  /**
   * Runs with the given feeds; every graph input must be fed. `into` gives pre-allocated tensors
   * for some outputs: ORT writes those outputs straight into their arrays (the run allocates no
   * buffer of its own for them); the other outputs come back as usual. onnxruntime-node 1.30 still
   * hands every output back as a copy in a fresh ArrayBuffer, the pre-allocated ones included, which
   * is dropped here — so an output as large as a whole KV cache would cost a copy per run.
   */
  async run(
    feeds: Readonly<Record<string, ort.Tensor>>,
    into?: Readonly<Record<string, ort.Tensor>>,
  ): Promise<Record<string, ort.Tensor>> {
    for (const name of this.inputNames) {
      if (feeds[name] === undefined) throw new Error(`session: input ${name} was not fed`);
    }
    if (into === undefined) return (await this.session.run(feeds)) as Record<string, ort.Tensor>;
    const fetches: Record<string, ort.Tensor | null> = {};
    for (const name of this.outputNames) fetches[name] = into[name] ?? null;
    const result = (await this.session.run(feeds, fetches)) as Record<string, ort.Tensor>;
    // ORT hands back its own wrapper of a pre-allocated output: return the caller's tensor.
    for (const name of Object.keys(into)) result[name] = into[name]!;
    return result;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

/**
 * "all" enables ORT's fusions, some of which (QuickGelu, SimplifiedLayerNorm...) exist only for
 * float32; a float64 graph (gradient checks, reference comparisons) keeps the basic level.
 */
function defaultOptimization(graph: Graph): "basic" | "all" {
  return graph.inputs.some((v) => v.dtype === "float64") ? "basic" : "all";
}

/** Wraps a typed array as an ORT tensor (no copy). */
export function tensor(dtype: DType, data: TypedArray, dims: readonly number[]): ort.Tensor {
  const size = dims.reduce((a, b) => a * b, 1);
  if (data.length !== size) throw new Error(`tensor: ${data.length} values for dims [${dims}]`);
  switch (dtype) {
    case "float32":
      return new ort.Tensor("float32", data as Float32Array, dims);
    case "float64":
      return new ort.Tensor("float64", data as Float64Array, dims);
    case "int64":
      return new ort.Tensor("int64", data as BigInt64Array, dims);
    case "bool":
      return new ort.Tensor("bool", data as Uint8Array, dims);
  }
}

/** A float tensor of `dtype` from numbers. */
export function int64Tensor(values: ArrayLike<number>, dims: readonly number[]): ort.Tensor {
  const data = new BigInt64Array(values.length);
  for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i]!);
  return tensor("int64", data, dims);
}

export { ort };
