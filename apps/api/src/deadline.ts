/**
 * One AbortSignal per request that fires on whichever comes first: the request's deadline, or the
 * client going away (the runtime aborts `request.signal` when the connection closes early; an SSE
 * stream also reports it through `stream.onAbort`). The solve receives the signal: it rejects at
 * once (SolveAbortedError), and the work underneath stops at its next step; the handler's own
 * waits (the body, the team's load) stop at once the same way, through `abortable` (@troupe/teams).
 */
import type { MiddlewareHandler } from "hono";

/** The request ran past its deadline (→ 504 deadline_exceeded). */
export class DeadlineExceededError extends Error {
  constructor(readonly deadlineMs: number) {
    super(`the request did not finish within its deadline of ${deadlineMs} ms`);
    this.name = "DeadlineExceededError";
  }
}

/** The client closed the connection; there is no one left to answer. */
export class ClientGoneError extends Error {
  constructor() {
    super("the client closed the connection");
    this.name = "ClientGoneError";
  }
}

export interface RequestDeadline {
  readonly signal: AbortSignal;
  /** Aborts with ClientGoneError (for disconnects reported other than by the request's signal). */
  clientGone(): void;
  /** Clears the timer; call when the request is finished. */
  dispose(): void;
}

declare module "hono" {
  interface ContextVariableMap {
    /** The request's deadline, started when it arrived (`withDeadline`). */
    deadline: RequestDeadline;
    /** Set by a handler that answers with a stream: the stream disposes the deadline when it ends. */
    deadlineKept: boolean;
  }
}

export function requestDeadline(deadlineMs: number, clientSignal?: AbortSignal): RequestDeadline {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineExceededError(deadlineMs)), deadlineMs);
  const onClientAbort = () => controller.abort(new ClientGoneError());
  if (clientSignal?.aborted) onClientAbort();
  else clientSignal?.addEventListener("abort", onClientAbort, { once: true });
  return {
    signal: controller.signal,
    clientGone: onClientAbort,
    dispose() {
      clearTimeout(timer);
      clientSignal?.removeEventListener("abort", onClientAbort);
    },
  };
}

/**
 * Middleware: the request's deadline, started first so that it counts from arrival (body upload
 * included), and disposed when the handler returns — unless it answers with a stream, which
 * disposes it when the stream ends (`deadlineKept`).
 */
export function withDeadline(deadlineMs: number): MiddlewareHandler {
  return async (c, next) => {
    const deadline = requestDeadline(deadlineMs, c.req.raw.signal);
    c.set("deadline", deadline);
    try {
      await next();
    } finally {
      if (c.get("deadlineKept") !== true) deadline.dispose();
    }
  };
}
