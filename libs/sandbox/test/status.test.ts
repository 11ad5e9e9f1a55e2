/** How a run ended: status classification and the shell-style exit decoding. */
import { describe, expect, test } from "vitest";
import { defaultLimits } from "../src/limits.ts";
import { type ClassifyInput, classifyRun, decodeShellStyleExit } from "../src/status.ts";

const base: ClassifyInput = {
  exitCode: 0,
  signal: null,
  killedFor: null,
  stderr: "",
  wallMs: 100,
  limits: { ...defaultLimits, cpuSeconds: 2 },
  cores: 2,
};

describe("classifyRun", () => {
  test.each<[string, Partial<ClassifyInput>, string]>([
    ["clean exit", {}, "ok"],
    ["non-zero exit", { exitCode: 1 }, "error"],
    [
      "our deadline wins over any exit",
      { killedFor: "timeout", signal: "SIGKILL", exitCode: null },
      "timeout",
    ],
    ["our output cap", { killedFor: "output", signal: "SIGKILL", exitCode: null }, "output-limit"],
    ["SIGXCPU", { signal: "SIGXCPU", exitCode: null }, "cpu-limit"],
    // hard CPU limit is 3 s; on 2 cores it can be reached after 1.5 s of wall time at the earliest
    [
      "SIGKILL after the hard CPU limit could be reached",
      { signal: "SIGKILL", exitCode: null, wallMs: 1500 },
      "cpu-limit",
    ],
    ["SIGKILL too early for the CPU limit", { signal: "SIGKILL", exitCode: null, wallMs: 1499 }, "killed"],
    ["MemoryError", { exitCode: 1, stderr: "Traceback ...\nMemoryError\n" }, "memory-limit"],
    [
      "bad_alloc abort",
      { signal: "SIGABRT", exitCode: null, stderr: "what(): std::bad_alloc" },
      "memory-limit",
    ],
    ["MemoryError printed by a successful program", { stderr: "MemoryError" }, "ok"],
    ["SIGSEGV", { signal: "SIGSEGV", exitCode: null }, "killed"],
    [
      "the run's memory cgroup OOM-killed it",
      { signal: "SIGKILL", exitCode: null, wallMs: 5000, oomKilled: true },
      "memory-limit",
    ],
    ["an OOM kill in a run that still exited 0", { oomKilled: true }, "ok"],
    ["SIGSYS (a foreign-ABI syscall)", { signal: "SIGSYS", exitCode: null }, "killed"],
  ])("%s", (_, change, expected) => {
    expect(classifyRun({ ...base, ...change })).toBe(expected);
  });
});

describe("decodeShellStyleExit", () => {
  test("128 + N is signal N; ordinary codes and real signals pass through", () => {
    expect(decodeShellStyleExit(152, null)).toEqual({ exitCode: null, signal: "SIGXCPU" });
    expect(decodeShellStyleExit(137, null)).toEqual({ exitCode: null, signal: "SIGKILL" });
    expect(decodeShellStyleExit(3, null)).toEqual({ exitCode: 3, signal: null });
    expect(decodeShellStyleExit(128, null)).toEqual({ exitCode: 128, signal: null });
    expect(decodeShellStyleExit(255, null)).toEqual({ exitCode: 255, signal: null }); // 127 is no signal
    expect(decodeShellStyleExit(null, "SIGKILL")).toEqual({ exitCode: null, signal: "SIGKILL" });
  });
});
