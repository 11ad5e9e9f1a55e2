import { describe, expect, it } from "vitest";
import { ClientGoneError, DeadlineExceededError, requestDeadline } from "../src/deadline.ts";

describe("a request's deadline", () => {
  it("fires with DeadlineExceededError after its ms, naming them", async () => {
    const deadline = requestDeadline(20);
    expect(deadline.signal.aborted).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(deadline.signal.reason).toBeInstanceOf(DeadlineExceededError);
    expect((deadline.signal.reason as Error).message).toBe(
      "the request did not finish within its deadline of 20 ms",
    );
  });

  it("fires with ClientGoneError when the client's signal aborts, or is already aborted", () => {
    const client = new AbortController();
    const deadline = requestDeadline(60_000, client.signal);
    client.abort();
    expect(deadline.signal.reason).toBeInstanceOf(ClientGoneError);
    deadline.dispose();
    expect(requestDeadline(60_000, AbortSignal.abort()).signal.reason).toBeInstanceOf(ClientGoneError);
  });

  it("clientGone aborts it; after dispose neither the timer nor the client aborts it", async () => {
    const gone = requestDeadline(60_000);
    gone.clientGone();
    expect(gone.signal.reason).toBeInstanceOf(ClientGoneError);
    const client = new AbortController();
    const done = requestDeadline(20, client.signal);
    done.dispose();
    client.abort();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(done.signal.aborted).toBe(false);
  });
});
