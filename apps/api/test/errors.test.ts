/**
 * The one error mapping: what handlers and middleware throw → status, code and field path, and
 * an unexpected error → a logged stack and a 500 that says nothing of it.
 */
import {
  BackendOverloadedError,
  SolveInputError,
  TeamNotFoundError,
  UnsupportedTeamError,
} from "@troupe/teams";
import { Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { describe, expect, it } from "vitest";
import { ClientGoneError, DeadlineExceededError } from "../src/deadline.ts";
import { bodyPath, errorHandler, toApiError } from "../src/errors.ts";

describe("bodyPath", () => {
  it("maps solve()'s paths onto the HTTP body", () => {
    expect(bodyPath(["task", "payload", "grid", 3])).toEqual(["input", "task", "payload", "grid", 3]);
    expect(bodyPath(["generate", "seed"])).toEqual(["input", "generate", "seed"]);
    expect(bodyPath(["options", "sampling", "temperature"])).toEqual(["options", "temperature"]);
    expect(bodyPath(["options", "maxTurns"])).toEqual(["options", "maxTurns"]);
  });
});

describe("toApiError", () => {
  const mapping = { bodyBytes: 100, log: () => {} };
  const request = { method: "POST", path: "/v1/solve" };
  it("maps each known error to its status, code and path", () => {
    const cases: [unknown, number, string, unknown][] = [
      [new DeadlineExceededError(5), 504, "deadline_exceeded", undefined],
      [new ClientGoneError(), 499, "invalid_request", undefined],
      [new UnsupportedTeamError("no sandbox"), 501, "unsupported", ["team"]],
      [new BackendOverloadedError("queue full"), 503, "overloaded", undefined],
      [new TeamNotFoundError("no team x"), 404, "not_found", undefined],
      [
        new SolveInputError("too wide", ["task", "payload", "grid"]),
        422,
        "invalid_request",
        ["input", "task", "payload", "grid"],
      ],
      [new HTTPException(413), 413, "payload_too_large", undefined],
      [new HTTPException(415), 415, "invalid_request", ["headers", "content-type"]],
    ];
    for (const [error, status, code, path] of cases) {
      const mapped = toApiError(error, mapping, request);
      expect({ status: mapped.status, code: mapped.code, path: mapped.path }).toEqual({ status, code, path });
    }
  });

  it("an overloaded backend: 503 with Retry-After", () => {
    const mapped = toApiError(new BackendOverloadedError("queue full", 2), mapping, request);
    expect(mapped.headers).toEqual({ "retry-after": "2" });
    expect(mapped.body()).toEqual({ error: { code: "overloaded", message: "queue full" } });
  });

  it("an unexpected error: 500 internal for the client, its stack in the log", async () => {
    const logged: unknown[] = [];
    const app = new Hono()
      .onError(errorHandler({ bodyBytes: 1, log: (...line) => logged.push(line) }))
      .get("/", () => {
        throw new Error("secret detail");
      });
    const res = await app.request("/");
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { code: "internal", message: "internal server error" } });
    expect(text).not.toContain("secret");
    expect(logged).toEqual([
      [
        "error",
        "unhandled error",
        {
          method: "GET",
          path: "/",
          error: expect.objectContaining({ stack: expect.stringContaining("secret detail") }),
        },
      ],
    ]);
  });
});
