/**
 * A small ONNX graph builder: typed values with static dtype and (partly symbolic) shapes, graph
 * inputs and outputs, constants, nodes, and serialisation to ONNX bytes with onnx-proto.
 *
 * Why hand-written: there is no maintained JS library that builds ONNX graphs *and* records a
 * gradient tape; the protobuf schema (onnx-proto) is the well-kept part we reuse.
 *
 * Every value knows its dtype and shape (dims are numbers or symbolic names such as "B", "T"),
 * because gradient rules need them to undo broadcasting. Every node emitted through `op` is also
 * recorded on the tape with its gradient rule (see autodiff.ts), unless emitted inside `untaped`.
 */
import onnxProto from "onnx-proto";

const { onnx } = onnxProto;

/** Opset 21: the newest default-domain opset ONNX Runtime 1.30 implements fully on CPU. */
export const OPSET = 21;
/** IR version 10 goes with opset 21. */
export const IR_VERSION = 10;

export type DType = "float32" | "float64" | "int64" | "bool";
export type FloatDType = "float32" | "float64";
/** A dimension: a fixed size, or a symbolic name bound at run time ("B", "T", ...). */
export type Dim = number | string;
export type Shape = readonly Dim[];

const ONNX_DTYPE: Record<DType, number> = { float32: 1, int64: 7, bool: 9, float64: 11 };

export interface Value {
  readonly graph: Graph;
  readonly name: string;
  readonly dtype: DType;
  readonly shape: Shape;
}

export type AttrValue = number | readonly number[] | string | { readonly float: number };

/** Gradient rule: from the gradients of a node's outputs (undefined = zero) to its inputs' gradients. */
export type GradRule = (
  outputGrads: readonly (Value | undefined)[],
  needed: readonly boolean[],
) => readonly (Value | undefined)[];

/** A composite's gradient rule: a `GradRule` that also reads the values its forward pass saved. */
export type CompositeGradRule<Saved> = (
  outputGrads: readonly (Value | undefined)[],
  needed: readonly boolean[],
  saved: Saved,
) => readonly (Value | undefined)[];

export interface TapeEntry {
  readonly inputs: readonly Value[];
  readonly outputs: readonly Value[];
  readonly grad: GradRule | undefined;
  readonly opType: string;
}

interface NodeRecord {
  readonly opType: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly attrs: Readonly<Record<string, AttrValue>>;
  readonly domain: string;
}

interface Initializer {
  readonly name: string;
  readonly dtype: DType;
  readonly dims: readonly number[];
  readonly data: readonly number[] | Float32Array | Float64Array;
}

export class Graph {
  readonly nodes: NodeRecord[] = [];
  readonly inputs: Value[] = [];
  readonly outputs: Value[] = [];
  readonly tape: TapeEntry[] = [];
  /** Dtype and shape of every value a node produces, by name (memory estimates read them). */
  readonly valueInfo = new Map<string, { readonly dtype: DType; readonly shape: Shape }>();
  private readonly initializers: Initializer[] = [];
  private readonly names = new Set<string>();
  private counter = 0;
  private tapeDepth = 0;

  constructor(readonly name = "graph") {}

  /** A unique value name starting with `prefix`. */
  fresh(prefix: string): string {
    let name = `${prefix}_${this.counter++}`;
    while (this.names.has(name)) name = `${prefix}_${this.counter++}`;
    this.names.add(name);
    return name;
  }

  input(name: string, dtype: DType, shape: Shape): Value {
    if (this.names.has(name)) throw new Error(`graph ${this.name}: duplicate value name ${name}`);
    this.names.add(name);
    const value: Value = { graph: this, name, dtype, shape };
    this.inputs.push(value);
    return value;
  }

  /** Marks `value` as a graph output named `name` (an Identity node renames when needed). */
  output(value: Value, name: string = value.name): Value {
    let out = value;
    if (name !== value.name) {
      if (this.names.has(name)) throw new Error(`graph ${this.name}: duplicate value name ${name}`);
      this.names.add(name);
      out = { graph: this, name, dtype: value.dtype, shape: value.shape };
      this.valueInfo.set(name, out);
      this.nodes.push({ opType: "Identity", inputs: [value.name], outputs: [name], attrs: {}, domain: "" });
    }
    this.outputs.push(out);
    return out;
  }

  /** A constant tensor (stored as an initializer). */
  constant(
    data: readonly number[] | Float32Array | Float64Array,
    dtype: DType,
    dims: readonly number[],
  ): Value {
    const size = dims.reduce((a, b) => a * b, 1);
    if (data.length !== size) throw new Error(`constant: ${data.length} values for shape [${dims}]`);
    const name = this.fresh("const");
    this.initializers.push({ name, dtype, dims, data });
    return { graph: this, name, dtype, shape: dims };
  }

  scalar(value: number, dtype: DType): Value {
    return this.constant([value], dtype, []);
  }

  /** An int64 vector constant (axes, shapes, starts...). */
  ints(values: readonly number[]): Value {
    return this.constant(values, "int64", [values.length]);
  }

  /**
   * Emits one node. `outputs` gives each output's dtype and shape (`omitted`: an optional output
   * left unnamed, which the kernel does not produce); `grad` is its gradient rule (undefined: not
   * differentiable, e.g. Shape or Equal).
   */
  op(
    opType: string,
    inputs: readonly (Value | undefined)[],
    outputs: readonly { dtype: DType; shape: Shape; omitted?: boolean }[],
    attrs: Readonly<Record<string, AttrValue>> = {},
    grad?: GradRule,
    domain = "",
  ): Value[] {
    for (const v of inputs) {
      if (v !== undefined && v.graph !== this)
        throw new Error(`${opType}: input ${v.name} is from another graph`);
    }
    const outs: Value[] = outputs.map((o) => ({
      graph: this,
      name: o.omitted ? "" : this.fresh(opType.toLowerCase()),
      dtype: o.dtype,
      shape: o.shape,
    }));
    for (const v of outs) if (v.name !== "") this.valueInfo.set(v.name, v);
    this.nodes.push({
      opType,
      inputs: inputs.map((v) => v?.name ?? ""),
      outputs: outs.map((v) => v.name),
      attrs,
      domain,
    });
    const defined = inputs.filter((v): v is Value => v !== undefined);
    if (this.tapeDepth === 0) this.tape.push({ inputs: defined, outputs: outs, grad, opType });
    return outs;
  }

  /**
   * Runs `build` without recording its nodes on the tape, then records one entry for the whole
   * composite with a hand-written gradient rule (fewer, cheaper backward nodes than the chain rule
   * through each primitive: RMSNorm, SiLU, softmax-style ops). `build` returns the outputs and the
   * forward values the rule reuses (`saved`), which the rule gets as its third argument.
   */
  composite<Saved>(
    opType: string,
    inputs: readonly Value[],
    build: () => { readonly outputs: Value[]; readonly saved: Saved },
    grad: CompositeGradRule<Saved>,
  ): Value[] {
    this.tapeDepth++;
    let forward: { readonly outputs: Value[]; readonly saved: Saved };
    try {
      forward = build();
    } finally {
      this.tapeDepth--;
    }
    const { outputs, saved } = forward;
    if (this.tapeDepth === 0)
      this.tape.push({ inputs, outputs, grad: (grads, needed) => grad(grads, needed, saved), opType });
    return outputs;
  }

  /** Emits nodes that are never differentiated (gradient rules themselves, masks, shapes). */
  untaped<T>(build: () => T): T {
    this.tapeDepth++;
    try {
      return build();
    } finally {
      this.tapeDepth--;
    }
  }

  /**
   * `output(v, name)` renames through an Identity node, and ORT's Identity copies its input (an
   * extra copy of every gradient and KV-cache tensor per run). At serialisation, an Identity whose
   * input is an internal value used by no other output is dropped and the producer writes the
   * output name directly.
   */
  private foldOutputIdentities(): { nodes: NodeRecord[]; rename: Map<string, string> } {
    const outputNames = new Set(this.outputs.map((v) => v.name));
    const external = new Set([...this.inputs.map((v) => v.name), ...this.initializers.map((i) => i.name)]);
    const produced = new Set(this.nodes.flatMap((n) => n.outputs));
    const rename = new Map<string, string>();
    const nodes = this.nodes.filter((n) => {
      if (n.opType !== "Identity" || !outputNames.has(n.outputs[0]!)) return true;
      const source = n.inputs[0]!;
      if (external.has(source) || outputNames.has(source) || !produced.has(source) || rename.has(source))
        return true;
      rename.set(source, n.outputs[0]!);
      return false;
    });
    return { nodes, rename };
  }

  /** Serialises to ONNX ModelProto bytes. */
  toBytes(): Uint8Array {
    const valueInfo = (v: Value) =>
      onnx.ValueInfoProto.create({
        name: v.name,
        type: {
          tensorType: {
            elemType: ONNX_DTYPE[v.dtype],
            shape: {
              dim: v.shape.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })),
            },
          },
        },
      });
    const { nodes, rename } = this.foldOutputIdentities();
    const mapped = (name: string) => rename.get(name) ?? name;
    const graph = onnx.GraphProto.create({
      name: this.name,
      node: nodes.map((n) =>
        onnx.NodeProto.create({
          opType: n.opType,
          input: n.inputs.map(mapped),
          output: n.outputs.map(mapped),
          domain: n.domain,
          attribute: Object.entries(n.attrs).map(([name, value]) => attribute(name, value)),
        }),
      ),
      input: this.inputs.map(valueInfo),
      output: this.outputs.map(valueInfo),
      initializer: this.initializers.map(tensorProto),
    });
    const model = onnx.ModelProto.create({
      irVersion: IR_VERSION,
      producerName: "troupe-engine-onnx",
      opsetImport: [
        { domain: "", version: OPSET },
        { domain: "com.microsoft", version: 1 },
      ],
      graph,
    });
    return onnx.ModelProto.encode(model).finish();
  }
}

function attribute(name: string, value: AttrValue): onnxProto.onnx.IAttributeProto {
  const T = onnx.AttributeProto.AttributeType;
  if (typeof value === "number") return { name, type: T.INT, i: value };
  if (typeof value === "string") return { name, type: T.STRING, s: new TextEncoder().encode(value) };
  if (Array.isArray(value)) return { name, type: T.INTS, ints: [...(value as number[])] };
  return { name, type: T.FLOAT, f: (value as { float: number }).float };
}

function tensorProto(init: Initializer): onnxProto.onnx.ITensorProto {
  const base = { name: init.name, dims: [...init.dims], dataType: ONNX_DTYPE[init.dtype] };
  // Float arrays (baked-in weights: millions of values) go in as raw little-endian bytes, a view of
  // the array: no per-number boxing into a JS array and protobuf varint field (≈ 100× faster to encode).
  if (init.data instanceof Float32Array || init.data instanceof Float64Array) {
    const want = init.dtype === "float32" ? Float32Array : Float64Array;
    if (init.data instanceof want) {
      return {
        ...base,
        rawData: new Uint8Array(init.data.buffer, init.data.byteOffset, init.data.byteLength),
      };
    }
  }
  switch (init.dtype) {
    case "float32":
      return { ...base, floatData: Array.from(init.data) };
    case "float64":
      return { ...base, doubleData: Array.from(init.data) };
    case "int64":
      return { ...base, int64Data: Array.from(init.data) };
    case "bool":
      return { ...base, int32Data: Array.from(init.data, (x) => (x ? 1 : 0)) };
  }
}

// ---------- shapes ----------

export function shapeToString(shape: Shape): string {
  return `[${shape.join(", ")}]`;
}

/** Numpy broadcasting of two shapes; symbolic dims broadcast against 1 and against themselves. */
export function broadcastShapes(a: Shape, b: Shape, what = "broadcast"): Dim[] {
  const rank = Math.max(a.length, b.length);
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    const da = a[a.length - rank + i] ?? 1;
    const db = b[b.length - rank + i] ?? 1;
    if (da === db || db === 1) out.push(da);
    else if (da === 1) out.push(db);
    else if (typeof da === "string" || typeof db === "string") out.push(typeof da === "number" ? da : db);
    else throw new Error(`${what}: shapes ${shapeToString(a)} and ${shapeToString(b)} do not broadcast`);
  }
  return out;
}

export function isFloat(dtype: DType): dtype is FloatDType {
  return dtype === "float32" || dtype === "float64";
}
