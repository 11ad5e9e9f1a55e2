/**
 * The worker as a child process: spawn it (python or torchrun), exchange frames, match replies to
 * requests by id. Requests are answered in order (the worker is sequential), but ids make a reply
 * to the wrong request an error rather than a silent mix-up.
 *
 * Failure handling:
 * - an op that raises in Python → its promise rejects with a TorchWorkerError carrying the
 *   Python exception type and traceback; the worker keeps serving;
 * - the process dies (crash, OOM kill, bad frame) → every pending and later request rejects with
 *   the exit code/signal and the tail of the worker's stderr;
 * - the controller dies → the worker notices (parent-death signal, pid polling, closed stdin).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  encodeFrame,
  type Frame,
  FrameReader,
  HelloResultSchema,
  type PayloadValue,
  PROTOCOL_VERSION,
  parseResult,
  type WorkerInfo,
} from "./protocol.ts";

/**
 * The directory holding the troupe_worker Python package when `workerDir` is not given:
 * TROUPE_TORCH_WORKER_DIR, else none (pip-installed). A library does not know where apps live;
 * the apps that start workers pass the folder of the @troupe/engine-torch-worker package.
 */
export const DEFAULT_WORKER_DIR: string | undefined = process.env.TROUPE_TORCH_WORKER_DIR || undefined;

export interface TorchrunLaunch {
  readonly kind: "torchrun";
  /** Processes (GPUs) on this node. */
  readonly nprocPerNode: number;
  /** Total nodes. The controller's node is node 0: rank 0, the one rank that talks to the controller, is on it. */
  readonly nnodes?: number;
  /**
   * host:port of node 0's rendezvous (required when nnodes > 1). Several nodes use torchrun's static
   * rendezvous with explicit node ranks (`--master_addr/--master_port --node_rank 0` here, node i
   * starts `--node_rank i`): a c10d rendezvous hands out ranks in arrival order and could put global
   * rank 0 on another node, which cannot reach the controller's socket.
   */
  readonly rdzvEndpoint?: string;
  /** The torchrun executable (default "torchrun"). */
  readonly torchrun?: string;
  readonly extraArgs?: readonly string[];
}

export interface WorkerProcessOptions {
  /** Python interpreter (default /usr/bin/python3). */
  readonly python?: string;
  /** Extra arguments for `python -m troupe_worker` (e.g. ["--device", "cuda", "--gradient-checkpointing"]). */
  readonly workerArgs?: readonly string[];
  /** Directory holding the troupe_worker package; null when it is pip-installed. */
  readonly workerDir?: string | null;
  readonly env?: Readonly<Record<string, string>>;
  /** Single process (default) or torchrun for several GPUs/nodes. */
  readonly launch?: { readonly kind: "process" } | TorchrunLaunch;
  /** How long the worker may take to start and answer hello (default 120 s: torch imports are slow). */
  readonly startupTimeoutMs?: number;
}

export class TorchWorkerError extends Error {
  constructor(
    readonly op: string,
    readonly pythonType: string,
    message: string,
    readonly pythonTraceback: string,
  ) {
    super(`torch worker: ${op}: ${pythonType}: ${message}\n--- Python traceback ---\n${pythonTraceback}`);
    this.name = "TorchWorkerError";
  }
}

export class TorchWorkerExited extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TorchWorkerExited";
  }
}

interface Pending {
  readonly op: string;
  resolve(frame: Frame): void;
  reject(error: Error): void;
}

const STDERR_TAIL_CHARS = 8000;

export class WorkerProcess {
  private readonly child: ChildProcess;
  private readonly reader = new FrameReader();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private stderrTail = "";
  private exitError: Error | undefined;
  private write!: (bytes: Uint8Array) => void;
  private socketServer: Server | undefined;
  private socketDir: string | undefined;
  readonly exited: Promise<void>;
  info!: WorkerInfo;

  private constructor(options: WorkerProcessOptions) {
    const python = options.python ?? "/usr/bin/python3";
    const workerDir = options.workerDir === undefined ? (DEFAULT_WORKER_DIR ?? null) : options.workerDir;
    const env: Record<string, string> = { ...(process.env as Record<string, string>), ...options.env };
    if (workerDir !== null) env.PYTHONPATH = [workerDir, env.PYTHONPATH].filter(Boolean).join(":");
    env.PYTHONUNBUFFERED = "1";
    const launch = options.launch ?? { kind: "process" };
    const workerArgs = [...(options.workerArgs ?? []), "--controller-pid", String(process.pid)];
    let command: string;
    let args: string[];
    if (launch.kind === "torchrun") {
      // torchrun's ranks share the terminal; rank 0 talks to us over a unix socket instead.
      this.socketDir = mkdtempSync(join(tmpdir(), "troupe-worker-"));
      const socketPath = join(this.socketDir, "controller.sock");
      this.socketServer = createServer();
      this.socketServer.listen(socketPath);
      command = launch.torchrun ?? "torchrun";
      // Underscore spellings: torchrun 1.x knows only these, 2.x accepts both.
      args = [
        `--nproc_per_node=${launch.nprocPerNode}`,
        `--nnodes=${launch.nnodes ?? 1}`,
        ...((launch.nnodes ?? 1) > 1 && launch.rdzvEndpoint
          ? [
              `--master_addr=${launch.rdzvEndpoint.slice(0, launch.rdzvEndpoint.lastIndexOf(":"))}`,
              `--master_port=${launch.rdzvEndpoint.slice(launch.rdzvEndpoint.lastIndexOf(":") + 1)}`,
              "--node_rank=0",
            ]
          : []),
        ...(launch.extraArgs ?? []),
        "-m",
        "troupe_worker",
        "--socket",
        socketPath,
        ...workerArgs,
      ];
    } else {
      command = python;
      args = ["-m", "troupe_worker", ...workerArgs];
    }
    this.child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr!.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
    });
    if (this.socketServer === undefined) {
      this.write = (bytes) => {
        this.child.stdin!.write(bytes);
      };
      this.child.stdout!.on("data", (chunk: Buffer) => this.receive(chunk));
    } else {
      this.child.stdout!.on("data", (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS);
      });
      const queued: Uint8Array[] = [];
      this.write = (bytes) => queued.push(bytes);
      this.socketServer.once("connection", (socket: Socket) => {
        this.write = (bytes) => {
          socket.write(bytes);
        };
        for (const bytes of queued.splice(0)) socket.write(bytes);
        socket.on("data", (chunk: Buffer) => this.receive(chunk));
        socket.on("error", (e) => this.fail(new TorchWorkerExited(`torch worker socket: ${e.message}`)));
      });
    }
    this.child.stdin!.on("error", () => {
      /* EPIPE after the worker died: reported by the exit handler */
    });
    this.exited = new Promise((resolve) => {
      this.child.on("error", (e) => {
        this.fail(new TorchWorkerExited(`torch worker: cannot start ${command}: ${e.message}`));
        resolve();
      });
      this.child.on("exit", (code, signal) => {
        const how = signal !== null ? `signal ${signal}` : `code ${code}`;
        this.fail(
          new TorchWorkerExited(
            `torch worker exited (${how})${this.stderrTail ? `; its stderr ends with:\n${this.stderrTail}` : ""}`,
          ),
        );
        this.cleanupSocket();
        resolve();
      });
    });
  }

  /** Starts the worker and performs the protocol handshake. */
  static async start(options: WorkerProcessOptions = {}): Promise<WorkerProcess> {
    const worker = new WorkerProcess(options);
    const timeoutMs = options.startupTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const hello = await Promise.race([
        worker.request("hello", { protocol: PROTOCOL_VERSION }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new TorchWorkerExited(`torch worker: no hello within ${timeoutMs} ms`)),
            timeoutMs,
          );
        }),
      ]);
      worker.info = parseResult("hello", HelloResultSchema, hello.body);
      return worker;
    } catch (e) {
      worker.kill();
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  private receive(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.reader.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    } catch (e) {
      this.fail(e as Error);
      this.kill();
      return;
    }
    for (const frame of frames) {
      const pending = this.pending.get(frame.id);
      if (pending === undefined) {
        // id 0 is the worker's "your frame was malformed" report, which ends the session.
        const why = frame.error
          ? `${frame.error.type}: ${frame.error.message}`
          : `unexpected reply id ${frame.id}`;
        this.fail(new TorchWorkerExited(`torch worker: ${why}`));
        continue;
      }
      this.pending.delete(frame.id);
      if (frame.kind === "error") {
        const err = frame.error!;
        pending.reject(new TorchWorkerError(pending.op, err.type, err.message, err.traceback));
      } else if (frame.op !== pending.op) {
        pending.reject(new TorchWorkerExited(`torch worker answered ${frame.op} to a ${pending.op} request`));
      } else {
        pending.resolve(frame);
      }
    }
  }

  private fail(error: Error): void {
    this.exitError ??= error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
  }

  /** Sends one request; resolves with the reply frame. */
  request(
    op: string,
    args: Record<string, unknown>,
    payloads: ReadonlyMap<string, PayloadValue> = new Map(),
  ): Promise<Frame> {
    if (this.exitError !== undefined) return Promise.reject(this.exitError);
    const id = this.nextId++;
    return new Promise<Frame>((resolve, reject) => {
      this.pending.set(id, { op, resolve, reject });
      this.write(encodeFrame({ kind: "request", id, op, body: args, payloads }));
    });
  }

  /** Asks the worker to exit, then waits (killing it after timeoutMs). */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.exitError === undefined) {
      await this.request("shutdown", {}).catch(() => undefined);
      this.child.stdin!.end();
    }
    const timer = setTimeout(() => this.kill(), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    this.cleanupSocket();
  }

  private cleanupSocket(): void {
    this.socketServer?.close();
    this.socketServer = undefined;
    if (this.socketDir !== undefined) rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }
}
