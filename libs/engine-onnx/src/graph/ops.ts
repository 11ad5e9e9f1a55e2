/**
 * Forward builders for the ONNX ops the models use, each with its reverse-mode gradient rule.
 *
 * A rule receives the gradients of the node's outputs (undefined where nothing flows back) and
 * which inputs need a gradient, and emits the ONNX nodes that compute the inputs' gradients.
 * Broadcasting binary ops sum their gradient back to the input's shape (`unbroadcast`).
 *
 *   y = a + b      ∂a = g            ∂b = g                       (each unbroadcast)
 *   y = a − b      ∂a = g            ∂b = −g
 *   y = a · b      ∂a = g·b          ∂b = g·a
 *   y = a / b      ∂a = g/b          ∂b = −g·y/b
 *   y = A @ B      ∂A = g @ Bᵀ       ∂B = Aᵀ @ g                  (batch dims unbroadcast)
 *   y = x Wᵀ + c   ∂x = g W          ∂W = gᵀ x      ∂c = Σ_rows g (Gemm, transB = 1)
 *   y = W[ids]     ∂W = onehot(ids)ᵀ @ g                           (embedding)
 *   y = exp x      ∂x = g·y          y = log x   ∂x = g/x
 *   y = √x         ∂x = g/(2y)       y = 1/x     ∂x = −g·y²        y = x^p  ∂x = g·p·x^(p−1)
 *   y = σ(x)       ∂x = g·y(1−y)     y = x·σ(x)  ∂x = g·σ(1 + x(1−σ))
 *   y = softmax x  ∂x = y(g − Σ g·y)              y = logsoftmax x  ∂x = g − eʸ Σ g
 *   y = Σ_axes x   ∂x = expand(g)     mean: expand(g)/n
 *   y = where(c, a, b), max/min, clip: the gradient goes to the selected branch (ties: first input)
 *   reshape/transpose/concat/split: the inverse reshaping of g
 */
import {
  broadcastShapes,
  type Dim,
  type DType,
  type GradRule,
  isFloat,
  type Shape,
  shapeToString,
  type Value,
} from "./builder.ts";

// ---------- helpers ----------

function one(values: Value[]): Value {
  return values[0]!;
}

function normAxis(axis: number, rank: number): number {
  const a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) throw new Error(`axis ${axis} out of range for rank ${rank}`);
  return a;
}

function requireFloat(op: string, ...values: Value[]): void {
  for (const v of values) {
    if (!isFloat(v.dtype)) throw new Error(`${op}: ${v.name} has dtype ${v.dtype}, expected a float`);
  }
}

function sameDType(op: string, a: Value, b: Value): void {
  if (a.dtype !== b.dtype)
    throw new Error(`${op}: dtypes differ (${a.name}: ${a.dtype}, ${b.name}: ${b.dtype})`);
}

export function scalarLike(x: Value, value: number): Value {
  return x.graph.scalar(value, x.dtype);
}

/** Sums `grad` over the axes that broadcasting added or stretched, back to `target`. */
export function unbroadcast(grad: Value, target: Shape): Value {
  let g = grad;
  const extra = g.shape.length - target.length;
  if (extra > 0) {
    g = reduceSum(
      g,
      Array.from({ length: extra }, (_, i) => i),
      false,
    );
  }
  const axes: number[] = [];
  target.forEach((d, i) => {
    if (d === 1 && g.shape[i] !== 1) axes.push(i);
  });
  if (axes.length > 0) g = reduceSum(g, axes, true);
  return g;
}

/** Zeros of `like`'s runtime shape. */
export function zerosLike(like: Value): Value {
  return expand(scalarLike(like, 0), shapeOf(like), like.shape);
}

// ---------- non-differentiable ops ----------

export function shapeOf(x: Value): Value {
  return one(x.graph.op("Shape", [x], [{ dtype: "int64", shape: [x.shape.length] }]));
}

export function cast(x: Value, to: DType): Value {
  const code = { float32: 1, int64: 7, bool: 9, float64: 11 }[to];
  const grad: GradRule | undefined =
    isFloat(x.dtype) && isFloat(to) ? ([g]) => [g === undefined ? undefined : cast(g, x.dtype)] : undefined;
  return one(x.graph.op("Cast", [x], [{ dtype: to, shape: x.shape }], { to: code }, grad));
}

function compare(opType: string, a: Value, b: Value): Value {
  const shape = broadcastShapes(a.shape, b.shape, opType);
  return one(a.graph.op(opType, [a, b], [{ dtype: "bool", shape }]));
}
export const equal = (a: Value, b: Value) => compare("Equal", a, b);
export const greater = (a: Value, b: Value) => compare("Greater", a, b);
export const greaterOrEqual = (a: Value, b: Value) => compare("GreaterOrEqual", a, b);
export const less = (a: Value, b: Value) => compare("Less", a, b);
export const lessOrEqual = (a: Value, b: Value) => compare("LessOrEqual", a, b);
export const and = (a: Value, b: Value) => compare("And", a, b);
export const or = (a: Value, b: Value) => compare("Or", a, b);

export function expand(x: Value, shape: Value, staticShape: Shape): Value {
  return one(x.graph.op("Expand", [x, shape], [{ dtype: x.dtype, shape: staticShape }]));
}

// ---------- elementwise ----------

function binary(opType: string, a: Value, b: Value, grad: (y: Value) => GradRule): Value {
  sameDType(opType, a, b);
  const shape = broadcastShapes(a.shape, b.shape, opType);
  let y: Value | undefined;
  const rule: GradRule = (gs, needed) => grad(y!)(gs, needed);
  y = one(a.graph.op(opType, [a, b], [{ dtype: a.dtype, shape }], {}, rule));
  return y;
}

export function add(a: Value, b: Value): Value {
  return binary("Add", a, b, () => ([g], [na, nb]) => [
    g && na ? unbroadcast(g, a.shape) : undefined,
    g && nb ? unbroadcast(g, b.shape) : undefined,
  ]);
}

export function sub(a: Value, b: Value): Value {
  return binary("Sub", a, b, () => ([g], [na, nb]) => [
    g && na ? unbroadcast(g, a.shape) : undefined,
    g && nb ? unbroadcast(neg(g), b.shape) : undefined,
  ]);
}

export function mul(a: Value, b: Value): Value {
  return binary("Mul", a, b, () => ([g], [na, nb]) => [
    g && na ? unbroadcast(mul(g, b), a.shape) : undefined,
    g && nb ? unbroadcast(mul(g, a), b.shape) : undefined,
  ]);
}

export function div(a: Value, b: Value): Value {
  return binary("Div", a, b, (y) => ([g], [na, nb]) => [
    g && na ? unbroadcast(div(g, b), a.shape) : undefined,
    g && nb ? unbroadcast(neg(div(mul(g, y), b)), b.shape) : undefined,
  ]);
}

/** Elementwise max; ties send the gradient to `a`. */
export function max(a: Value, b: Value): Value {
  return pick("Max", a, b, greaterOrEqual);
}

/** Elementwise min; ties send the gradient to `a`. */
export function min(a: Value, b: Value): Value {
  return pick("Min", a, b, lessOrEqual);
}

/** The elementwise winner of `a` and `b`: the gradient goes to `a` where `aWins(a, b)`, else to `b`. */
function pick(opType: string, a: Value, b: Value, aWins: (a: Value, b: Value) => Value): Value {
  return binary(opType, a, b, () => ([g], [na, nb]) => {
    if (!g) return [undefined, undefined];
    const takeA = cast(aWins(a, b), g.dtype);
    return [
      na ? unbroadcast(mul(g, takeA), a.shape) : undefined,
      nb ? unbroadcast(mul(g, sub(scalarLike(g, 1), takeA)), b.shape) : undefined,
    ];
  });
}

function unary(opType: string, x: Value, grad: (g: Value, y: Value) => Value, attrs = {}): Value {
  requireFloat(opType, x);
  let y: Value | undefined;
  const rule: GradRule = ([g]) => [g ? grad(g, y!) : undefined];
  y = one(x.graph.op(opType, [x], [{ dtype: x.dtype, shape: x.shape }], attrs, rule));
  return y;
}

export const neg = (x: Value): Value => unary("Neg", x, (g) => neg(g));
export const exp = (x: Value): Value => unary("Exp", x, (g, y) => mul(g, y));
export const log = (x: Value): Value => unary("Log", x, (g) => div(g, x));
export const sqrt = (x: Value): Value => unary("Sqrt", x, (g, y) => div(mul(g, scalarLike(g, 0.5)), y));
export const reciprocal = (x: Value): Value => unary("Reciprocal", x, (g, y) => neg(mul(g, mul(y, y))));
export const sigmoid = (x: Value): Value =>
  unary("Sigmoid", x, (g, y) => mul(g, mul(y, sub(scalarLike(y, 1), y))));

/** x^p for a constant exponent p. */
export function pow(x: Value, p: number): Value {
  requireFloat("Pow", x);
  const exponent = scalarLike(x, p);
  const rule: GradRule = ([g]) => [
    g ? mul(g, mul(scalarLike(g, p), powNoGrad(x, scalarLike(x, p - 1)))) : undefined,
  ];
  return one(x.graph.op("Pow", [x, exponent], [{ dtype: x.dtype, shape: x.shape }], {}, rule));
}
function powNoGrad(x: Value, e: Value): Value {
  return one(x.graph.op("Pow", [x, e], [{ dtype: x.dtype, shape: x.shape }]));
}

/** SiLU x·σ(x), one composite with the closed-form gradient σ(1 + x(1 − σ)). */
export function silu(x: Value): Value {
  requireFloat("SiLU", x);
  const g0 = x.graph;
  return one(
    g0.composite(
      "SiLU",
      [x],
      () => {
        const s = one(g0.op("Sigmoid", [x], [{ dtype: x.dtype, shape: x.shape }]));
        return { outputs: g0.op("Mul", [x, s], [{ dtype: x.dtype, shape: x.shape }]), saved: s };
      },
      ([g], _needed, s) => {
        if (!g) return [undefined];
        const one1 = scalarLike(x, 1);
        return [mul(g, mul(s, add(one1, mul(x, sub(one1, s)))))];
      },
    ),
  );
}

/** where(cond, a, b); the gradient goes to the selected branch. */
export function where(cond: Value, a: Value, b: Value): Value {
  sameDType("Where", a, b);
  const shape = broadcastShapes(broadcastShapes(cond.shape, a.shape), b.shape, "Where");
  const rule: GradRule = ([g, , ,], [, na, nb]) => {
    if (!g) return [undefined, undefined, undefined];
    const zero = scalarLike(g, 0);
    return [
      undefined,
      na ? unbroadcast(whereNoGrad(cond, g, zero), a.shape) : undefined,
      nb ? unbroadcast(whereNoGrad(cond, zero, g), b.shape) : undefined,
    ];
  };
  return one(a.graph.op("Where", [cond, a, b], [{ dtype: a.dtype, shape }], {}, rule));
}
function whereNoGrad(cond: Value, a: Value, b: Value): Value {
  const shape = broadcastShapes(broadcastShapes(cond.shape, a.shape), b.shape, "Where");
  return one(a.graph.op("Where", [cond, a, b], [{ dtype: a.dtype, shape }]));
}

/** clip(x, lo, hi) with scalar bounds; the gradient passes where lo ≤ x ≤ hi. */
export function clip(x: Value, lo: Value, hi: Value): Value {
  requireFloat("Clip", x);
  const rule: GradRule = ([g]) => {
    if (!g) return [undefined, undefined, undefined];
    const inside = cast(and(greaterOrEqual(x, lo), lessOrEqual(x, hi)), g.dtype);
    return [mul(g, inside), undefined, undefined];
  };
  return one(x.graph.op("Clip", [x, lo, hi], [{ dtype: x.dtype, shape: x.shape }], {}, rule));
}

// ---------- reductions ----------

function reducedShape(shape: Shape, axes: readonly number[], keepdims: boolean): Dim[] {
  const out: Dim[] = [];
  shape.forEach((d, i) => {
    if (axes.includes(i)) {
      if (keepdims) out.push(1);
    } else out.push(d);
  });
  return out;
}

function unsqueeze(x: Value, axes: readonly number[], shape: Shape): Value {
  return one(x.graph.op("Unsqueeze", [x, x.graph.ints(axes)], [{ dtype: x.dtype, shape }]));
}

/** Broadcasts a reduced gradient back over the reduced axes to `x`'s shape. */
function expandReduced(g: Value, x: Value, axes: readonly number[], keepdims: boolean): Value {
  const kept = keepdims ? g : unsqueeze(g, axes, reducedShape(x.shape, axes, true));
  return expand(kept, shapeOf(x), x.shape);
}

export function reduceSum(x: Value, axes: readonly number[], keepdims = true): Value {
  const ax = axes.map((a) => normAxis(a, x.shape.length));
  return reduce("ReduceSum", x, ax, keepdims, ([g]) => [g ? expandReduced(g, x, ax, keepdims) : undefined]);
}

/** Mean over `axes`; their sizes must be static (the gradient divides by the count). */
export function reduceMean(x: Value, axes: readonly number[], keepdims = true): Value {
  const ax = axes.map((a) => normAxis(a, x.shape.length));
  let count = 1;
  for (const a of ax) {
    const d = x.shape[a]!;
    if (typeof d !== "number") throw new Error(`ReduceMean over symbolic axis ${a} (${d}) of ${x.name}`);
    count *= d;
  }
  return reduce("ReduceMean", x, ax, keepdims, ([g]) => [
    g ? expandReduced(mul(g, scalarLike(g, 1 / count)), x, ax, keepdims) : undefined,
  ]);
}

/** A reduction node over the (normalised) axes `ax`, with its gradient rule. */
function reduce(opType: string, x: Value, ax: readonly number[], keepdims: boolean, rule: GradRule): Value {
  const out = { dtype: x.dtype, shape: reducedShape(x.shape, ax, keepdims) };
  return one(x.graph.op(opType, [x, x.graph.ints(ax)], [out], { keepdims: keepdims ? 1 : 0 }, rule));
}

export function sumAll(x: Value): Value {
  return reduceSum(
    x,
    x.shape.map((_, i) => i),
    false,
  );
}

export function softmax(x: Value, axis = -1): Value {
  requireFloat("Softmax", x);
  let y: Value | undefined;
  const rule: GradRule = ([g]) => {
    if (!g) return [undefined];
    const dot = reduceSum(mul(g, y!), [axis], true);
    return [mul(y!, sub(g, dot))];
  };
  y = one(x.graph.op("Softmax", [x], [{ dtype: x.dtype, shape: x.shape }], { axis }, rule));
  return y;
}

export function logSoftmax(x: Value, axis = -1): Value {
  requireFloat("LogSoftmax", x);
  let y: Value | undefined;
  const rule: GradRule = ([g]) => {
    if (!g) return [undefined];
    return [sub(g, mul(exp(y!), reduceSum(g, [axis], true)))];
  };
  y = one(x.graph.op("LogSoftmax", [x], [{ dtype: x.dtype, shape: x.shape }], { axis }, rule));
  return y;
}

// ---------- linear algebra ----------

function transposeLastTwo(x: Value): Value {
  const r = x.shape.length;
  const perm = x.shape.map((_, i) => i);
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return transpose(x, perm);
}

/** Batched matrix product with numpy broadcasting over the leading dims (both ranks ≥ 2). */
export function matmul(a: Value, b: Value): Value {
  requireFloat("MatMul", a, b);
  sameDType("MatMul", a, b);
  if (a.shape.length < 2 || b.shape.length < 2) throw new Error("MatMul: both operands need rank ≥ 2");
  const [m, k] = a.shape.slice(-2);
  const [k2, n] = b.shape.slice(-2);
  if (typeof k === "number" && typeof k2 === "number" && k !== k2) {
    throw new Error(`MatMul: inner dims differ, ${shapeToString(a.shape)} @ ${shapeToString(b.shape)}`);
  }
  const batch = broadcastShapes(a.shape.slice(0, -2), b.shape.slice(0, -2), "MatMul");
  const rule: GradRule = ([g], [na, nb]) => [
    g && na ? unbroadcast(matmul(g, transposeLastTwo(b)), a.shape) : undefined,
    g && nb ? unbroadcast(matmul(transposeLastTwo(a), g), b.shape) : undefined,
  ];
  return one(a.graph.op("MatMul", [a, b], [{ dtype: a.dtype, shape: [...batch, m!, n!] }], {}, rule));
}

/** Raw Gemm (2-D): y = op(A) op(B) (+ c). */
function gemm(a: Value, b: Value, transA: 0 | 1, transB: 0 | 1, c?: Value): Value {
  const m = transA ? a.shape[1]! : a.shape[0]!;
  const n = transB ? b.shape[0]! : b.shape[1]!;
  return one(a.graph.op("Gemm", [a, b, c], [{ dtype: a.dtype, shape: [m, n] }], { transA, transB }));
}

/**
 * A torch Linear on rows: y = x Wᵀ + bias, x [N, in], W [out, in] (HF layout, no transpose copy).
 */
export function linear(x: Value, weight: Value, bias?: Value): Value {
  requireFloat("Linear", x, weight);
  if (x.shape.length !== 2 || weight.shape.length !== 2) {
    throw new Error(
      `Linear: x ${shapeToString(x.shape)} and ${weight.name} ${shapeToString(weight.shape)} must be 2-D`,
    );
  }
  if (
    typeof x.shape[1] === "number" &&
    typeof weight.shape[1] === "number" &&
    x.shape[1] !== weight.shape[1]
  ) {
    throw new Error(
      `Linear: x ${shapeToString(x.shape)} does not match ${weight.name} ${shapeToString(weight.shape)}`,
    );
  }
  const rule: GradRule = ([g], [nx, nw, nb]) => [
    g && nx ? gemm(g, weight, 0, 0) : undefined,
    g && nw ? gemm(g, x, 1, 0) : undefined,
    g && nb ? reduceSum(g, [0], false) : undefined,
  ];
  const inputs = bias === undefined ? [x, weight] : [x, weight, bias];
  return one(
    x.graph.op(
      "Gemm",
      inputs,
      [{ dtype: x.dtype, shape: [x.shape[0]!, weight.shape[0]!] }],
      { transB: 1 },
      rule,
    ),
  );
}

/**
 * Embedding lookup W[ids] (Gather on axis 0). The gradient is onehot(ids)ᵀ @ g: one Gemm, which
 * ORT runs in float32 and float64 alike (ScatterND with reduction="add" is the alternative; it was
 * not measured against this one yet).
 */
export function embedding(weight: Value, ids: Value): Value {
  requireFloat("Embedding", weight);
  if (ids.dtype !== "int64") throw new Error(`Embedding: ids ${ids.name} must be int64`);
  const vocab = weight.shape[0]!;
  const dim = weight.shape[1]!;
  const rule: GradRule = ([g], [nw]) => {
    if (!g || !nw) return [undefined, undefined];
    if (typeof vocab !== "number") throw new Error("Embedding gradient needs a static vocabulary size");
    const gr = weight.graph;
    const flatIds = reshape(ids, gr.ints([-1, 1]), ["N", 1]);
    const flatG = reshape(g, gr.ints([-1, typeof dim === "number" ? dim : 0]), ["N", dim]);
    const vocabRow = gr.constant(
      Array.from({ length: vocab }, (_, i) => i),
      "int64",
      [1, vocab],
    );
    const onehot = cast(equal(flatIds, vocabRow), g.dtype);
    return [gemm(onehot, flatG, 1, 0), undefined];
  };
  return one(
    weight.graph.op(
      "Gather",
      [weight, ids],
      [{ dtype: weight.dtype, shape: [...ids.shape, dim] }],
      { axis: 0 },
      rule,
    ),
  );
}

// ---------- shape ops ----------

/** Reshape to a runtime shape (an int64 value, 0 copies, −1 infers) with the static shape given. */
export function reshape(x: Value, shape: Value, staticShape: Shape): Value {
  const rule: GradRule = ([g]) => [g ? reshapeNoGrad(g, shapeOf(x), x.shape) : undefined, undefined];
  return one(x.graph.op("Reshape", [x, shape], [{ dtype: x.dtype, shape: staticShape }], {}, rule));
}
function reshapeNoGrad(x: Value, shape: Value, staticShape: Shape): Value {
  return one(x.graph.op("Reshape", [x, shape], [{ dtype: x.dtype, shape: staticShape }]));
}

export function transpose(x: Value, perm: readonly number[]): Value {
  if (perm.length !== x.shape.length) throw new Error(`Transpose: perm [${perm}] for rank ${x.shape.length}`);
  const inverse = perm.map((_, i) => perm.indexOf(i));
  const rule: GradRule = ([g]) => [g ? transpose(g, inverse) : undefined];
  return one(
    x.graph.op(
      "Transpose",
      [x],
      [{ dtype: x.dtype, shape: perm.map((p) => x.shape[p]!) }],
      { perm: [...perm] },
      rule,
    ),
  );
}

export function concat(values: readonly Value[], axis: number): Value {
  const first = values[0]!;
  const a = normAxis(axis, first.shape.length);
  const sizes = values.map((v) => v.shape[a]!);
  const total: Dim = sizes.every((s) => typeof s === "number")
    ? (sizes as number[]).reduce((x, y) => x + y, 0)
    : sizes.join("+");
  const shape = first.shape.map((d, i) => (i === a ? total : d));
  const rule: GradRule = ([g], needed) => {
    if (!g) return values.map(() => undefined);
    if (!sizes.every((s) => typeof s === "number")) {
      throw new Error(`Concat gradient needs static sizes along axis ${a}, got [${sizes}]`);
    }
    const parts = split(g, sizes as number[], a);
    return parts.map((p, i) => (needed[i] ? p : undefined));
  };
  return one(first.graph.op("Concat", values, [{ dtype: first.dtype, shape }], { axis: a }, rule));
}

export function split(x: Value, sizes: readonly number[], axis: number): Value[] {
  const a = normAxis(axis, x.shape.length);
  const outs = sizes.map((s) => ({ dtype: x.dtype, shape: x.shape.map((d, i) => (i === a ? s : d)) }));
  let ys: Value[] = [];
  const rule: GradRule = (gs) => {
    if (gs.every((g) => g === undefined)) return [undefined, undefined];
    const filled = gs.map((g, i) => g ?? zerosLike(ys[i]!));
    return [concat(filled, a), undefined];
  };
  ys = x.graph.op("Split", [x, x.graph.ints(sizes)], outs, { axis: a }, rule);
  return ys;
}

/** Static slice along one axis (no gradient: used only on paths that are not differentiated). */
export function slice(x: Value, axis: number, start: number, end: number, staticShape: Shape): Value {
  const gr = x.graph;
  const rule: GradRule = () => {
    throw new Error("Slice has no gradient rule; it is only used outside differentiated paths");
  };
  return one(
    gr.op(
      "Slice",
      [x, gr.ints([start]), gr.ints([end]), gr.ints([axis])],
      [{ dtype: x.dtype, shape: staticShape }],
      {},
      rule,
    ),
  );
}

/**
 * The first `rows` rows of x (axis 0), e.g. the output-head rows of the token ids a tokenizer can
 * produce. Gradient: g padded back to x's rows with zeros (Pad), so the rows left out get none.
 */
export function leadingRows(x: Value, rows: number): Value {
  const gr = x.graph;
  const total = x.shape[0];
  if (typeof total !== "number" || !Number.isInteger(rows) || rows < 1 || rows > total)
    throw new Error(`leadingRows: ${rows} rows of ${x.name} ${shapeToString(x.shape)}`);
  const rank = x.shape.length;
  const rule: GradRule = ([g]) => {
    if (!g || rows === total) return [g];
    // pads = [begin of each axis..., end of each axis...]: only axis 0 grows at its end.
    const pads = [...new Array<number>(rank).fill(0), total - rows, ...new Array<number>(rank - 1).fill(0)];
    return [one(gr.op("Pad", [g, gr.ints(pads)], [{ dtype: g.dtype, shape: x.shape }]))];
  };
  return one(
    gr.op(
      "Slice",
      [x, gr.ints([0]), gr.ints([rows]), gr.ints([0])],
      [{ dtype: x.dtype, shape: [rows, ...x.shape.slice(1)] }],
      {},
      rule,
    ),
  );
}

/**
 * The last `count` entries of `axis` (count: an int64 [1] value known only at run time), e.g. the
 * trailing columns of a left-padded batch. Gradient: g padded back with zeros in front along
 * `axis` (Pad with run-time pads), so the entries left out get none.
 */
export function trailing(x: Value, axis: number, count: Value, staticShape: Shape): Value {
  const gr = x.graph;
  const rank = x.shape.length;
  const a = normAxis(axis, rank);
  if (count.dtype !== "int64") throw new Error(`trailing: count ${count.name} must be int64`);
  const rule: GradRule = ([g]) => {
    if (!g) return [undefined];
    const pads = gr.untaped(() => {
      // pads = [begins of every axis, ends of every axis]: only `axis` grows, at its beginning.
      const full = slice(shapeOf(x), 0, a, a + 1, [1]);
      const front = one(gr.op("Sub", [full, count], [{ dtype: "int64", shape: [1] }]));
      const zeros = (n: number) => (n > 0 ? [gr.ints(new Array<number>(n).fill(0))] : []);
      return concat([...zeros(a), front, ...zeros(rank - a - 1), ...zeros(rank)], 0);
    });
    return [one(gr.op("Pad", [g, pads], [{ dtype: g.dtype, shape: x.shape }]))];
  };
  const start = gr.untaped(() => one(gr.op("Neg", [count], [{ dtype: "int64", shape: [1] }])));
  return one(
    gr.op(
      "Slice",
      [x, start, gr.ints([Number.MAX_SAFE_INTEGER]), gr.ints([a])],
      [{ dtype: x.dtype, shape: staticShape }],
      {},
      rule,
    ),
  );
}
