/**
 * The sandbox in a process of its own: `createSandboxService` forks a small Node process that holds
 * a `Sandbox` (service-process.ts) and returns a `ConnectedRunner` that sends it every run over
 * Node's IPC channel.
 *
 * Why: starting a process forks the process that starts it, and fork copies the page tables of the
 * whole address space. A trainer holding its models and ONNX Runtime's arenas (800 MiB) took 50 ms
 * a spawn, on its JavaScript thread, against 5 ms for a 45 MiB process (measured here with
 * `/bin/true`); a math warm start spent 47% of that thread in `spawn`. The service stays small,
 * so its spawns stay cheap, and they no longer stop the caller's thread.
 *
 * The runs are the same: the service's sandbox is made with the same options (its probe run
 * included), and a connected run's fd-3 traffic is relayed both ways in order. If the service
 * process dies, the runs in flight reject with one line saying so, and the next run starts a new
 * one. The service exits when its parent does (the IPC channel closes).
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { SandboxOptions } from "./sandbox.ts";
import { SandboxUnavailableError } from "./sandbox.ts";
import type { ConnectedRunner, LiveRun, RunRequest, RunResult } from "./types.ts";

/** What the client sends the service. */
export type ServiceRequest =
  | { readonly op: "run"; readonly id: number; readonly request: RunRequest }
  | { readonly op: "connect"; readonly id: number; readonly requests: readonly RunRequest[] }
  | { readonly op: "send"; readonly id: number; readonly run: number; readonly data: string }
  | { readonly op: "end" | "kill"; readonly id: number; readonly run: number }
  | { readonly op: "talked"; readonly id: number };

/** What the service answers. */
export type ServiceReply =
  | { readonly op: "ready"; readonly isolation: RunResult["isolation"] }
  | { readonly op: "unavailable"; readonly reason: string }
  | { readonly op: "result"; readonly id: number; readonly result: RunResult }
  | { readonly op: "results"; readonly id: number; readonly results: readonly RunResult[] }
  | { readonly op: "error"; readonly id: number; readonly message: string }
  | { readonly op: "started"; readonly id: number }
  | { readonly op: "data"; readonly id: number; readonly run: number; readonly chunk: Uint8Array }
  | { readonly op: "done"; readonly id: number; readonly run: number; readonly result: RunResult };

/** The service entry next to this module: TypeScript when running from source, JavaScript when built. */
function serviceEntry(): string {
  const here = fileURLToPath(import.meta.url);
  return here.replace(/service\.(ts|js)$/, "service-process.$1");
}

/** A connected run seen from the client: fd-3 chunks kept for late listeners, as `LiveRun` promises. */
class RelayedRun implements LiveRun {
  private readonly chunks: Buffer[] = [];
  private readonly listeners: ((chunk: Buffer) => void)[] = [];
  private settle!: (result: RunResult) => void;
  private fail!: (error: Error) => void;
  readonly done: Promise<RunResult>;

  constructor(
    private readonly post: (message: ServiceRequest) => void,
    private readonly id: number,
    private readonly index: number,
  ) {
    this.done = new Promise<RunResult>((resolve, reject) => {
      this.settle = resolve;
      this.fail = reject;
    });
    this.done.catch(() => {}); // a caller that never waits on it is not an unhandled rejection
  }
  send(data: string): void {
    this.post({ op: "send", id: this.id, run: this.index, data });
  }
  onData(listener: (chunk: Buffer) => void): void {
    for (const chunk of this.chunks) listener(chunk);
    this.listeners.push(listener);
  }
  end(): void {
    this.post({ op: "end", id: this.id, run: this.index });
  }
  kill(): void {
    this.post({ op: "kill", id: this.id, run: this.index });
  }
  received(chunk: Buffer): void {
    this.chunks.push(chunk);
    for (const listener of this.listeners) listener(chunk);
  }
  finished(result: RunResult): void {
    this.settle(result);
  }
  lost(error: Error): void {
    this.fail(error);
  }
}

interface Pending {
  resolve(reply: ServiceReply): void;
  reject(error: Error): void;
  /** A connected run's runs, once started. */
  runs?: RelayedRun[];
  started?: () => void;
}

/** The runner of a sandbox service (see the module's comment). */
export class SandboxService implements ConnectedRunner {
  private child: ChildProcess | null = null;
  private ready: Promise<void> | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  constructor(private readonly options: SandboxOptions = {}) {}

  /** Starts the service (if it is not running) and waits for its sandbox's probe run. */
  start(): Promise<void> {
    this.ready ??= this.spawn();
    return this.ready;
  }

  private spawn(): Promise<void> {
    const entry = serviceEntry();
    const child = fork(entry, [JSON.stringify(this.options)], {
      // From source, Node reads the entry through tsx (whatever the parent runs under: a CLI, a
      // test worker); built, it is plain JavaScript.
      execArgv: entry.endsWith(".ts") ? ["--conditions=@troupe/source", "--import", "tsx"] : [],
      serialization: "advanced", // Buffers cross as bytes, not as JSON arrays
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.child = child;
    // The service never keeps its parent alive by itself: its channel holds the event loop only
    // while runs are in flight (`hold`), so a CLI ends when its work does.
    // (It holds it while the service starts, until `ready`.)
    child.unref();
    return new Promise<void>((resolve, reject) => {
      let up = false;
      child.on("message", (reply: ServiceReply) => {
        if (reply.op === "ready") {
          up = true;
          this.unrefIfIdle();
          resolve();
        } else if (reply.op === "unavailable") {
          this.unrefIfIdle();
          reject(new SandboxUnavailableError(reply.reason));
        } else {
          this.route(reply);
        }
      });
      child.on("exit", (code, signal) => {
        const why = `sandbox service exited (${signal ?? `code ${code}`})`;
        if (!up) reject(new Error(`${why} before it was ready`));
        if (this.child === child) {
          this.child = null;
          this.ready = null; // the next run starts a new service
        }
        for (const [id, pending] of this.pending) {
          this.pending.delete(id);
          const error = new Error(`${why} during a run`);
          for (const run of pending.runs ?? []) run.lost(error);
          pending.reject(error);
        }
      });
    });
  }

  private route(reply: ServiceReply): void {
    if (!("id" in reply)) return;
    const pending = this.pending.get(reply.id);
    if (pending === undefined) return;
    switch (reply.op) {
      case "started":
        pending.started?.();
        return;
      case "data":
        pending.runs?.[reply.run]?.received(Buffer.from(reply.chunk));
        return;
      case "done":
        pending.runs?.[reply.run]?.finished(reply.result);
        return;
      default:
        this.release(reply.id);
        pending.resolve(reply);
    }
  }

  private post(message: ServiceRequest): void {
    this.child?.send(message);
  }

  /** Registers a request awaiting its reply; the channel holds the event loop while any does. */
  private hold(id: number, pending: Pending): void {
    this.pending.set(id, pending);
    this.child?.channel?.ref();
  }

  private release(id: number): void {
    this.pending.delete(id);
    this.unrefIfIdle();
  }

  /** With no reply awaited, the channel no longer holds the event loop. */
  private unrefIfIdle(): void {
    if (this.pending.size === 0) this.child?.channel?.unref();
  }

  async run(request: RunRequest): Promise<RunResult> {
    await this.start();
    const id = this.nextId++;
    const reply = await new Promise<ServiceReply>((resolve, reject) => {
      this.hold(id, { resolve, reject });
      this.post({ op: "run", id, request });
    });
    if (reply.op === "result") return reply.result;
    throw new Error(reply.op === "error" ? reply.message : `sandbox service: unexpected reply ${reply.op}`);
  }

  async runConnected<T>(
    requests: readonly RunRequest[],
    talk: (runs: readonly LiveRun[]) => Promise<T>,
  ): Promise<{ readonly value: T; readonly results: readonly RunResult[] }> {
    await this.start();
    const id = this.nextId++;
    const post = (message: ServiceRequest) => this.post(message);
    const runs = requests.map((_, i) => new RelayedRun(post, id, i));
    let talked: { value: T } | { error: unknown } | undefined;
    const reply = await new Promise<ServiceReply>((resolve, reject) => {
      this.hold(id, {
        resolve,
        reject,
        runs,
        // The runs have started in the service: the caller talks to them, then the service ends them.
        started: () => {
          talk(runs)
            .then(
              (value) => (talked = { value }),
              (error: unknown) => (talked = { error }),
            )
            .finally(() => post({ op: "talked", id }));
        },
      });
      post({ op: "connect", id, requests });
    });
    if (reply.op === "error") throw new Error(reply.message);
    if (reply.op !== "results") throw new Error(`sandbox service: unexpected reply ${reply.op}`);
    if (talked === undefined) throw new Error("sandbox service: the runs ended before the conversation did");
    if ("error" in talked) throw talked.error;
    return { value: talked.value, results: reply.results };
  }

  /** Stops the service process (runs in flight reject). */
  close(): void {
    this.child?.kill("SIGKILL");
    this.child = null;
    this.ready = null;
  }
}

/**
 * A sandbox in a service process of its own, its probe run done: rejects with
 * `SandboxUnavailableError` where `createSandbox` would.
 */
export async function createSandboxService(options: SandboxOptions = {}): Promise<SandboxService> {
  const service = new SandboxService(options);
  await service.start();
  return service;
}
