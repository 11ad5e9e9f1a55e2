/** Limits and requests: defaults, validation, and the per-process share of the budget without a cgroup. */
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { checkRelativePath, defaultLimits, perProcessShare, resolveRequest } from "../src/limits.ts";

const MiB = 2 ** 20;

describe("request validation", () => {
  test("limits default, and a partial override keeps the rest", () => {
    const resolved = resolveRequest({ language: "python", code: "", limits: { wallMs: 123 } });
    expect(resolved.limits).toEqual({ ...defaultLimits, wallMs: 123 });
  });

  test("checkRelativePath accepts exactly the paths made of safe non-empty segments", () => {
    const segment = fc.stringMatching(/^[a-zA-Z0-9_.-]{1,8}$/).filter((s) => s !== "." && s !== "..");
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 4 }), (parts) => {
        expect(checkRelativePath(parts.join("/"))).toBeNull();
      }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 3 }), fc.constantFrom("..", ".", ""), (parts, bad) => {
        expect(checkRelativePath([...parts, bad, "x"].join("/"))).not.toBeNull();
      }),
    );
    expect(checkRelativePath("/etc/passwd")).toMatch(/absolute/);
  });
});

describe("without a cgroup the budget is divided between processes", () => {
  test("the defaults: 4 processes/threads of 120 MiB, their sum within 512 MiB with both tmpfs", () => {
    const tmpfs = 16 * MiB + 4096; // fileBytes + one input file's page slack
    const shm = 16 * MiB;
    const share = perProcessShare(defaultLimits, tmpfs + shm);
    expect(share.processes).toBe(4);
    expect(share.memoryBytes).toBe(Math.floor((512 * MiB - tmpfs - shm) / 4));
    expect(share.processes * share.memoryBytes + tmpfs + shm).toBeLessThanOrEqual(defaultLimits.memoryBytes);
    expect(perProcessShare({ ...defaultLimits, memoryBytes: 64 * MiB }, 32 * MiB)).toEqual({
      ...defaultLimits,
      memoryBytes: 32 * MiB,
      processes: 1,
    });
  });

  test("a budget the tmpfs leave no room in is refused with one line", () => {
    expect(() => perProcessShare({ ...defaultLimits, memoryBytes: 40 * MiB }, 32 * MiB)).toThrow(
      `sandbox: limits.memoryBytes (${40 * MiB} bytes) leaves ${8 * MiB} bytes for processes after the run's tmpfs (${32 * MiB} bytes); without a cgroup the run needs at least ${16 * MiB} (raise memoryBytes or lower fileBytes)`,
    );
  });
});
