/**
 * Fault points: a process whose TROUPE_KILL_AT names "<phase>@<n>" is killed by SIGKILL at exactly
 * that point (a real kill -9: nothing after it runs); any other point, step or an unset variable
 * passes through. Each case is its own node process.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const faults = join(import.meta.dirname, "..", "..", "src", "run", "faults.ts");

/** A process that passes the points `calls` in order, printing each one it survives. */
function passPoints(calls: readonly [string, number][], killAt: string | undefined) {
  const script = [
    `import { faultPoint } from ${JSON.stringify(faults)};`,
    ...calls.map(([phase, n]) => `faultPoint(${JSON.stringify(phase)}, ${n}); console.log("${phase}@${n}");`),
  ].join("\n");
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TROUPE_KILL_AT;
  if (killAt !== undefined) env.TROUPE_KILL_AT = killAt;
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    env,
    encoding: "utf8",
  });
  return { signal: run.signal, status: run.status, passed: run.stdout.split("\n").filter(Boolean) };
}

const points: [string, number][] = [
  ["after-rollout", 0],
  ["after-learner", 0],
  ["after-rollout", 1],
  ["after-commit", 1],
];

describe("faultPoint", () => {
  it("kills the process with SIGKILL at the named phase and step, not before", () => {
    expect(passPoints(points, "after-rollout@1")).toEqual({
      signal: "SIGKILL",
      status: null,
      passed: ["after-rollout@0", "after-learner@0"],
    });
  });

  it("passes every point when unset, or when it names another step or phase", () => {
    for (const killAt of [undefined, "after-rollout@2", "mid-checkpoints@0", "after-rollout"]) {
      expect(passPoints(points, killAt)).toEqual({
        signal: null,
        status: 0,
        passed: points.map(([p, n]) => `${p}@${n}`),
      });
    }
  });
});
