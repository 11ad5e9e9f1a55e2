/**
 * The HTTP layer: JSON POSTs to the server under a concurrency limit, each attempt with its own
 * timeout, retried with backoff (retry.ts). Only `fetch`, `AbortController` and timers, so it runs
 * unchanged in Node and in Cloudflare Workers.
 *
 * The concurrency limit (p-limit) counts HTTP attempts in flight, not logical requests: a request
 * waiting out its backoff gives its slot to another, so a rate-limited server does not idle the
 * engine, and the server never sees more than `concurrency` open requests from this engine.
 */
import pLimit, { type LimitFunction } from "p-limit";
import { errorBodyMessage, OpenAIRequestError } from "./errors.ts";
import { type BackoffConfig, backoffDelayMs, isRetryableStatus, parseRetryAfterMs, sleep } from "./retry.ts";

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface HttpClientOptions {
  /** Server root, e.g. `http://127.0.0.1:8000` (paths such as `/v1/completions` are appended). */
  readonly baseUrl: string;
  /** Sent as `Authorization: Bearer …` when set. */
  readonly apiKey?: string;
  /** Most HTTP requests in flight at once. */
  readonly concurrency: number;
  /** Limit of one attempt, from sending the request to reading the last byte of the answer (ms). */
  readonly timeoutMs: number;
  readonly backoff: BackoffConfig;
  readonly fetch: FetchLike;
  /** Uniform [0, 1) draws for the backoff jitter. */
  readonly random: () => number;
}

export interface HttpResult {
  readonly status: number;
  readonly text: string;
  /** Attempts made, the successful one included. */
  readonly attempts: number;
}

type Attempt =
  | {
      readonly kind: "response";
      readonly status: number;
      readonly text: string;
      readonly retryAfter: string | null;
    }
  | { readonly kind: "timeout" }
  | { readonly kind: "network"; readonly error: unknown };

export class HttpClient {
  private readonly limit: LimitFunction;
  /**
   * One controller per attempt or backoff wait in flight; close() aborts them all at once.
   * Per call, not one for the client's life: Cloudflare Workers forbid touching an I/O object
   * (an AbortController's signal included) from a request other than the one that made it.
   */
  private readonly inFlightControllers = new Set<AbortController>();
  private isClosed = false;

  constructor(private readonly options: HttpClientOptions) {
    this.limit = pLimit(options.concurrency);
  }

  /** Requests being sent or read right now. */
  get inFlight(): number {
    return this.limit.activeCount;
  }

  /**
   * POSTs `body` as JSON to `path`; resolves with the 2xx answer. Throws OpenAIRequestError for a
   * non-retryable status, or the last failure once the retries are spent.
   */
  async post(path: string, body: unknown, signal?: AbortSignal): Promise<HttpResult> {
    const url = `${this.options.baseUrl}${path}`;
    const json = JSON.stringify(body);
    const { backoff } = this.options;
    for (let attempt = 1; ; attempt++) {
      this.throwIfAborted(url, attempt - 1, signal);
      const outcome = await this.limit(() => this.attemptOnce(url, json, attempt, signal));
      let error: OpenAIRequestError;
      let retryAfterMs: number | undefined;
      if (outcome.kind === "response") {
        if (outcome.status >= 200 && outcome.status < 300) {
          return { status: outcome.status, text: outcome.text, attempts: attempt };
        }
        error = new OpenAIRequestError(
          "status",
          url,
          attempt,
          `HTTP ${outcome.status}: ${errorBodyMessage(outcome.text)}`,
          outcome.status,
          outcome.text.slice(0, 2000),
        );
        if (!isRetryableStatus(outcome.status)) throw error;
        retryAfterMs = parseRetryAfterMs(outcome.retryAfter);
      } else if (outcome.kind === "timeout") {
        error = new OpenAIRequestError(
          "timeout",
          url,
          attempt,
          `no answer within ${this.options.timeoutMs} ms`,
        );
      } else {
        const cause = outcome.error as { message?: string; cause?: { code?: string; message?: string } };
        const detail = cause.cause?.code ?? cause.cause?.message ?? cause.message ?? String(outcome.error);
        error = new OpenAIRequestError(
          "network",
          url,
          attempt,
          `network error: ${detail}`,
          undefined,
          undefined,
          {
            cause: outcome.error,
          },
        );
      }
      if (attempt > backoff.retries) throw error;
      const wait =
        retryAfterMs === undefined
          ? backoffDelayMs(attempt - 1, backoff, this.options.random)
          : Math.min(retryAfterMs, backoff.maxRetryAfterMs);
      await this.sleepOrThrow(wait, url, attempt, signal);
    }
  }

  /** Ends every request in flight and refuses new ones. */
  close(): void {
    this.isClosed = true;
    for (const controller of this.inFlightControllers) controller.abort(new Error("engine closed"));
    this.inFlightControllers.clear();
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** A controller close() aborts; release it when the call is over. */
  private track(): { signal: AbortSignal; release(): void } {
    const controller = new AbortController();
    this.inFlightControllers.add(controller);
    return { signal: controller.signal, release: () => void this.inFlightControllers.delete(controller) };
  }

  private async attemptOnce(
    url: string,
    json: string,
    attempt: number,
    signal?: AbortSignal,
  ): Promise<Attempt> {
    this.throwIfAborted(url, attempt - 1, signal);
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error("timeout")), this.options.timeoutMs);
    const closing = this.track();
    const signals = [closing.signal, timeout.signal];
    if (signal !== undefined) signals.push(signal);
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    try {
      const response = await this.options.fetch(url, {
        method: "POST",
        headers,
        body: json,
        signal: AbortSignal.any(signals),
      });
      // Reading the body is part of the attempt: a connection dropped mid-body is a network error.
      const text = await response.text();
      return {
        kind: "response",
        status: response.status,
        text,
        retryAfter: response.headers.get("retry-after"),
      };
    } catch (error) {
      this.throwIfAborted(url, attempt, signal);
      if (timeout.signal.aborted) return { kind: "timeout" };
      return { kind: "network", error };
    } finally {
      clearTimeout(timer);
      closing.release();
    }
  }

  private throwIfAborted(url: string, attempts: number, signal?: AbortSignal): void {
    if (this.isClosed) {
      throw new OpenAIRequestError("closed", url, attempts, "the engine was closed");
    }
    if (signal?.aborted) {
      throw new OpenAIRequestError(
        "closed",
        url,
        attempts,
        `cancelled: ${String(signal.reason)}`,
        undefined,
        undefined,
        {
          cause: signal.reason,
        },
      );
    }
  }

  private async sleepOrThrow(ms: number, url: string, attempts: number, signal?: AbortSignal): Promise<void> {
    const closing = this.track();
    const signals = [closing.signal];
    if (signal !== undefined) signals.push(signal);
    try {
      await sleep(ms, AbortSignal.any(signals));
    } catch {
      this.throwIfAborted(url, attempts, signal);
    } finally {
      closing.release();
    }
  }
}
