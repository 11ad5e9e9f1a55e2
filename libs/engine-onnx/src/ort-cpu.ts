/**
 * The CPU time ONNX Runtime spends in this process: every session run of onnxruntime-node, of every
 * engine, counted as it happens. Servers report it beside their total CPU, to say how much of a
 * request is the model.
 *
 * onnxruntime-node runs a session synchronously on the JavaScript thread: its session handler's
 * `run` defers the native call with `setImmediate` and resolves with its result. The meter wraps
 * that `run` (the native function itself is read-only): it queues its own immediate just before the
 * handler's — immediates run in order, so it takes the process's CPU time (user + system, every
 * thread: ORT's intra-op threads included) right before the native call — and takes it again when
 * the run's promise settles, in the microtasks that follow that same immediate.
 *
 * Timing a run costs one immediate and two getrusage calls, about 2–4 µs, which on a tiny team's
 * server was 2.5% of its JavaScript thread (its decode steps take 50–300 µs). So one run in
 * `SAMPLE_EVERY` (by default), drawn at random, is timed and counts for that many runs: an unbiased estimate
 * whose relative error is about 1/√(timed runs) (3% over the ~1,000 timed runs of a short
 * benchmark scenario). Random, not every n-th, so a periodic pattern of runs (a prefill, then
 * decode steps) cannot alias with the sampling.
 */

/** One run in this many is timed, by default. */
export const SAMPLE_EVERY = 8;
let sampleEvery = SAMPLE_EVERY;

export interface OrtCpuUsage {
  /** Session runs so far. */
  readonly runs: number;
  /** CPU milliseconds (user + system) spent inside them (estimated from the timed runs). */
  readonly cpuMs: number;
}

interface SessionHandler {
  run(...args: unknown[]): Promise<unknown>;
}
interface NodeBackend {
  createInferenceSessionHandler(...args: unknown[]): Promise<SessionHandler>;
}

let runs = 0;
let cpuMicros = 0;
let metered = false;
const meteredHandlers = new WeakSet<object>();

function meterHandlers(prototype: SessionHandler): void {
  if (meteredHandlers.has(prototype)) return;
  meteredHandlers.add(prototype);
  const run = prototype.run;
  prototype.run = function meteredRun(this: SessionHandler, ...args: unknown[]) {
    runs++;
    if (sampleEvery > 1 && Math.random() * sampleEvery >= 1) return run.apply(this, args);
    let started: NodeJS.CpuUsage | undefined;
    setImmediate(() => {
      started = process.cpuUsage();
    });
    return run.apply(this, args).finally(() => {
      if (started === undefined) return;
      const spent = process.cpuUsage(started);
      cpuMicros += (spent.user + spent.system) * sampleEvery;
    });
  };
}

/**
 * Starts counting (idempotent; Node only): every session handler created from now on is metered.
 * `sampleEvery: 1` times every run (exact, at 2–4 µs a run); the first call's choice holds.
 */
export function meterOrtCpu(options: { readonly sampleEvery?: number } = {}): void {
  if (metered) return;
  const every = options.sampleEvery ?? SAMPLE_EVERY;
  if (!Number.isInteger(every) || every < 1)
    throw new Error(`meterOrtCpu: sampleEvery must be an integer ≥ 1, got ${every}`);
  sampleEvery = every;
  metered = true;
  // Looked up at run time (no static node: import: the Workers build bundles this module unused).
  const { createRequire } = process.getBuiltinModule("node:module");
  const { onnxruntimeBackend } = createRequire(import.meta.url)("onnxruntime-node/dist/backend.js") as {
    onnxruntimeBackend: NodeBackend;
  };
  const create = onnxruntimeBackend.createInferenceSessionHandler;
  onnxruntimeBackend.createInferenceSessionHandler = async function meteredCreate(...args: unknown[]) {
    const handler = await create.apply(this, args);
    meterHandlers(Object.getPrototypeOf(handler) as SessionHandler);
    return handler;
  };
}

/** What ONNX Runtime has spent since `meterOrtCpu()` (zeros before it). */
export function ortCpuUsage(): OrtCpuUsage {
  return { runs, cpuMs: cpuMicros / 1000 };
}
