import { describe, expect, it } from "vitest";
import { BackendOverloadedError } from "../src/backend.ts";

describe("BackendOverloadedError", () => {
  it("says when to retry: 1 second unless the backend knows better", () => {
    const error = new BackendOverloadedError("queue full (64 waiting)");
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("BackendOverloadedError");
    expect(error.message).toBe("queue full (64 waiting)");
    expect(error.retryAfterSeconds).toBe(1);
    expect(new BackendOverloadedError("busy", 5).retryAfterSeconds).toBe(5);
  });
});
