/**
 * The body middleware: a body over the limit is a 413 whether or not it declares its length,
 * and never reaches the handler; a body within it reaches the handler whole.
 */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { bufferedBody } from "../src/body.ts";
import { withDeadline } from "../src/deadline.ts";
import { errorHandler } from "../src/errors.ts";

const app = new Hono()
  .onError(errorHandler({ bodyBytes: 16, log: () => {} }))
  .use(withDeadline(5_000))
  .use(bufferedBody(16))
  .post("/", async (c) => c.text(`got ${(await c.req.text()).length}`));

/** A body of `size` bytes sent as a stream (no Content-Length). */
const streamed = (size: number) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let i = 0; i < size; i += 4) controller.enqueue(new Uint8Array(Math.min(4, size - i)));
      controller.close();
    },
  });

describe("bufferedBody", () => {
  it("passes a body within the limit, whole", async () => {
    const res = await app.request("/", { method: "POST", body: "x".repeat(16) });
    expect(await res.text()).toBe("got 16");
    const chunked = await app.request("/", {
      method: "POST",
      body: streamed(12),
      duplex: "half",
    } as RequestInit);
    expect(await chunked.text()).toBe("got 12");
  });

  it("413 payload_too_large over the limit, by Content-Length or by the bytes that came", async () => {
    for (const init of [
      { method: "POST", body: "x".repeat(17) },
      { method: "POST", body: streamed(40), duplex: "half" },
    ]) {
      const res = await app.request("/", init as RequestInit);
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({
        error: { code: "payload_too_large", message: "the body is larger than 16 bytes" },
      });
    }
  });
});
