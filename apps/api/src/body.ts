/**
 * The request body, read before validation under the request's two bounds: at most `maxBytes`
 * (413 as soon as a Content-Length or the bytes received so far pass it, so an oversized body is
 * never buffered) and within the request's deadline, which started when the request arrived (a
 * body that trickles in slower than the deadline is a 408, not a connection held open for ever).
 * Web-standard streams only, so it runs on Node and on Workers alike.
 */
import { abortable } from "@troupe/teams";
import type { MiddlewareHandler } from "hono";
import { DeadlineExceededError } from "./deadline.ts";
import { ApiError } from "./errors.ts";

const utf8 = new TextDecoder();

export const tooLarge = (maxBytes: number) =>
  new ApiError(413, "payload_too_large", `the body is larger than ${maxBytes} bytes`);

/**
 * The whole body of `request` (null when it has none), or an ApiError: 413 over `maxBytes`, 408
 * when `signal` fires with the deadline first. A client that goes away rejects with the signal's
 * reason (ClientGoneError). The reader is never cancelled: cancelling would destroy the connection
 * that the error answer still has to travel on.
 */
export async function readBodyWithin(
  request: Request,
  maxBytes: number,
  signal: AbortSignal,
): Promise<Uint8Array<ArrayBuffer> | null> {
  // (The method first: on Node, asking for `request.body` builds a web stream over the socket.)
  if (request.method === "GET" || request.method === "HEAD") return null;
  const declared = request.headers.get("content-length");
  const sized = declared !== null && !request.headers.has("transfer-encoding");
  if (sized && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  let buffer = new Uint8Array(Math.min(maxBytes, Number(declared) || 16 * 1024));
  let size = 0;
  try {
    if (sized) {
      // A declared length within the limit: the runtime reads exactly that many bytes, in one go
      // (on Node, @hono/node-server reads them from the socket directly, without web streams).
      return new Uint8Array(await abortable(request.arrayBuffer(), signal));
    }
    if (request.body === null) return null;
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await abortable(reader.read(), signal);
      if (done) break;
      if (size + value.byteLength > maxBytes) throw tooLarge(maxBytes);
      if (size + value.byteLength > buffer.byteLength) {
        const grown = new Uint8Array(
          Math.min(maxBytes, Math.max(size + value.byteLength, buffer.byteLength * 2)),
        );
        grown.set(buffer.subarray(0, size));
        buffer = grown;
      }
      buffer.set(value, size);
      size += value.byteLength;
    }
  } catch (error) {
    if (error instanceof DeadlineExceededError) {
      throw new ApiError(
        408,
        "request_timeout",
        `the request body did not arrive within the deadline of ${error.deadlineMs} ms` +
          (sized ? ` (${declared} bytes declared)` : ` (${size} bytes received)`),
        undefined,
        { connection: "close" },
      );
    }
    throw error;
  }
  return buffer.subarray(0, size);
}

/**
 * Middleware, after `withDeadline`: the body read whole within `maxBytes` and the deadline, so
 * validation and handlers work on bytes already here (never on a stream still arriving).
 */
export function bufferedBody(maxBytes: number): MiddlewareHandler {
  return async (c, next) => {
    const body = await readBodyWithin(c.req.raw, maxBytes, c.get("deadline").signal);
    if (body !== null) {
      // Hono's body cache answers c.req.json()/text()/arrayBuffer() (the validator's json()
      // included) from these bytes, without wrapping them in a second Request.
      // (Its type says values; it holds the promises of the Body methods.)
      const cache = c.req.bodyCache as Record<string, Promise<unknown>>;
      cache.arrayBuffer = Promise.resolve(body.slice().buffer);
      cache.text = Promise.resolve(utf8.decode(body));
    }
    await next();
  };
}
