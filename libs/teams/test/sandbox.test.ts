/**
 * needsSandbox on a published team's environment: a team trained on an environment of its own is
 * refused (UnsupportedTeamError, HTTP 501) until its module is registered with the manifest's hash.
 */
import { registerEnvironmentModule } from "@troupe/envs/registry";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { needsSandbox, UnsupportedTeamError } from "../src/index.ts";

const module = { path: "tasks/echo.ts", sha256: "a".repeat(64) };
const environment = { name: "echo-sandbox-test", module, options: {} };
const entry = {
  name: "echo-sandbox-test",
  description: "echo",
  options: z.object({}).strict(),
  build: () => {
    throw new Error("not built here");
  },
};

describe("needsSandbox", () => {
  it("refuses a team whose own module is not loaded, then answers from the module's entry", () => {
    expect(() => needsSandbox(environment)).toThrow(UnsupportedTeamError);
    expect(() => needsSandbox(environment)).toThrow(
      'this team: environment "echo-sandbox-test" comes from tasks/echo.ts (sha256 aaaaaaaaaaaa…), which this server has not loaded',
    );
    registerEnvironmentModule({ default: entry }, module);
    expect(needsSandbox(environment)).toBe(false);
    // another content under the same path and name: refused again
    expect(() => needsSandbox({ ...environment, module: { ...module, sha256: "b".repeat(64) } })).toThrow(
      UnsupportedTeamError,
    );
    expect(needsSandbox({ name: "math", options: {} })).toBe(true);
  });
});
