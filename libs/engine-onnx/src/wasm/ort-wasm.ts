/// <reference path="./wasm-module.d.ts" />
/**
 * `@troupe/engine-onnx/wasm`: onnxruntime-web's WebAssembly build behind the part of the
 * onnxruntime-node API the engine uses (`InferenceSession.create/run/release`, `Tensor`, `env`), so
 * the engine's own code — graph builder, ModelRunner, generateBatch, sampling — runs unchanged in
 * Cloudflare's workerd. A Worker bundle maps `onnxruntime-node` to this module
 * (`[alias]` in infra/workers/wrangler.embedded.toml); on Node nothing imports it.
 *
 * Three things differ from the browser, each handled here:
 *  - No `fetch` of the .wasm and no runtime compilation: workerd refuses `WebAssembly.instantiate`
 *    on bytes (code generation is disallowed). The .wasm is imported as a module (wrangler's
 *    CompiledWasm rule gives a `WebAssembly.Module`, compiled at upload). onnxruntime-web only takes
 *    bytes (`env.wasm.wasmBinary`), so a one-byte marker stands in for them, and the Emscripten
 *    loader's `WebAssembly.instantiate(marker)` is answered with the imported module — for that one
 *    call, during initialisation; every other call goes to the real function.
 *  - One thread, no proxy worker: Workers have no Web Workers for Emscripten's pthreads.
 *  - Pre-allocated outputs: onnxruntime-node writes an output into a tensor passed in `fetches`
 *    (ModelRunner's KV-cache step relies on it); onnxruntime-web copies a CPU tensor into the wasm
 *    heap and never back. `run` here runs without them and copies each output into the caller's
 *    array, so the runner sees node's behaviour.
 */

import ortWasmModule from "onnxruntime-web/ort-wasm-simd-threaded.wasm";
import * as web from "onnxruntime-web/wasm";

export { env, Tensor } from "onnxruntime-web/wasm";

type WebSession = web.InferenceSession;

/**
 * Stands in for the wasm bytes; recognised by the patched `WebAssembly.instantiate` below. An
 * ArrayBuffer, not a typed array: the loader wraps it as `new Uint8Array(MARKER)`, a view of this
 * very buffer (a typed array would be copied, and no longer recognisable).
 */
const MARKER = new ArrayBuffer(1);

/**
 * Runs `create` — the isolate's first session, which makes onnxruntime-web start its runtime —
 * with `WebAssembly.instantiate(MARKER)` answered by the bundled module. The patch is removed as
 * soon as that session exists (or failed).
 */
async function withBundledWasm<T>(create: () => Promise<T>): Promise<T> {
  web.env.wasm.numThreads = 1;
  web.env.wasm.proxy = false;
  web.env.wasm.wasmBinary = MARKER;
  const instantiate = WebAssembly.instantiate;
  const patched = (source: unknown, imports?: WebAssembly.Imports) => {
    const bytes = source as ArrayBufferView | undefined;
    if (ArrayBuffer.isView(bytes) && bytes.buffer === MARKER) {
      memory = findMemory(imports);
      return instantiate(ortWasmModule, imports).then((instance) => ({ instance, module: ortWasmModule }));
    }
    return (instantiate as (s: unknown, i?: WebAssembly.Imports) => Promise<unknown>)(source, imports);
  };
  WebAssembly.instantiate = patched as typeof WebAssembly.instantiate;
  try {
    return await create();
  } finally {
    WebAssembly.instantiate = instantiate;
  }
}

/** The runtime's linear memory (the Emscripten loader passes it in as an import). */
let memory: WebAssembly.Memory | undefined;

function findMemory(imports: WebAssembly.Imports | undefined): WebAssembly.Memory | undefined {
  for (const module of Object.values(imports ?? {})) {
    for (const value of Object.values(module)) if (value instanceof WebAssembly.Memory) return value;
  }
  return undefined;
}

/**
 * Bytes of wasm memory the runtime holds now (it grows and never shrinks): with the JS heap, what
 * counts against a Worker isolate's 128 MB (how docs/serving.md measured what a team takes).
 * Undefined before the first session.
 */
export function wasmMemoryBytes(): number | undefined {
  return memory?.buffer.byteLength;
}

/** The isolate's first session: later ones wait for it (onnxruntime-web initialises only once). */
let first: Promise<unknown> | undefined;

type Feeds = Record<string, web.Tensor>;

export class InferenceSession {
  private constructor(private readonly session: WebSession) {}

  get inputNames(): readonly string[] {
    return this.session.inputNames;
  }
  get outputNames(): readonly string[] {
    return this.session.outputNames;
  }

  static async create(model: Uint8Array, options: web.InferenceSession.SessionOptions = {}) {
    // Thread counts and spinning are native-runtime settings; the wasm build has one thread.
    const { intraOpNumThreads: _i, interOpNumThreads: _o, extra: _e, ...rest } = options;
    const create = () => web.InferenceSession.create(model, { ...rest, executionProviders: ["wasm"] });
    if (first === undefined) {
      const created = withBundledWasm(create);
      first = created;
      return new InferenceSession(await created);
    }
    await first.catch(() => undefined); // its error is the init error, reported by the next line too
    return new InferenceSession(await create());
  }

  async run(feeds: Feeds, fetches?: Record<string, web.Tensor | null>): Promise<Feeds> {
    const out = (await this.session.run(feeds)) as Feeds;
    for (const [name, into] of Object.entries(fetches ?? {})) {
      if (into === null) continue;
      const result = out[name];
      if (result === undefined) throw new Error(`onnxruntime-web: no output ${name}`);
      if (result.size !== into.size) {
        throw new Error(`onnxruntime-web: output ${name} has ${result.size} values, its buffer ${into.size}`);
      }
      (into.data as Float32Array).set(result.data as Float32Array);
      out[name] = into;
    }
    return out;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}
