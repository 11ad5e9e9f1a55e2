import { describe, expect, test } from "vitest";
import { type CodeRunner, isConnectedRunner } from "../src/types.ts";

describe("isConnectedRunner", () => {
  test("a runner is connected when it can start runs that talk to each other", () => {
    const plain: CodeRunner = { run: async () => Promise.reject(new Error("unused")) } as CodeRunner;
    expect(isConnectedRunner(plain)).toBe(false);
    const connected = { ...plain, runConnected: async () => Promise.reject(new Error("unused")) };
    expect(isConnectedRunner(connected)).toBe(true);
    expect(isConnectedRunner({ ...plain, runConnected: "not a function" } as unknown as CodeRunner)).toBe(
      false,
    );
  });
});
