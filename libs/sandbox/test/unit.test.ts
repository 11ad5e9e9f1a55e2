/** Pure parts: status classification, exit decoding, the bwrap command line, request validation. */

import { existsSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { bubblewrapCommand, MASKED_PROC_FILES } from "../src/bubblewrap.ts";
import { checkRelativePath, defaultLimits, resolveRequest } from "../src/limits.ts";
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

describe("bubblewrapCommand", () => {
  const tools = {
    bwrap: "/usr/bin/bwrap",
    prlimit: "/usr/bin/prlimit",
    timeout: "/usr/bin/timeout",
    setpriv: "/usr/bin/setpriv",
    dropTo: { uid: 65534, gid: 65534 },
    extraReadOnly: ["/opt/python"],
  };
  const limits = { ...defaultLimits, cpuSeconds: 4, wallMs: 2500, processes: 8 };
  const argv = bubblewrapCommand({
    tools,
    limits,
    tmpfsBytes: 1_000_000,
    shmBytes: 500_000,
    files: ["main.py", "a/b/c.txt"],
    seccompFd: 5,
    infoFd: 6,
    env: { HOME: "/work" },
    argv: ["python3", "main.py"],
  });
  const joined = argv.join(" ");

  test("layers in order: timeout backstop, drop to nobody, bwrap, prlimit, program", () => {
    expect(argv.slice(0, 4)).toEqual(["/usr/bin/timeout", "-s", "KILL", "5s"]); // ceil(2.5) + 2
    expect(argv.slice(4, 10)).toEqual([
      "/usr/bin/setpriv",
      "--reuid=65534",
      "--regid=65534",
      "--clear-groups",
      "--inh-caps=-all",
      "--",
    ]);
    expect(argv[10]).toBe("/usr/bin/bwrap");
    expect(argv.slice(-10)).toEqual([
      "/usr/bin/prlimit",
      "--cpu=4:5",
      `--as=${defaultLimits.memoryBytes}`,
      "--nproc=9", // + bwrap's init
      `--fsize=${defaultLimits.fileBytes}`,
      `--nofile=${defaultLimits.openFiles}`,
      "--core=0",
      "--",
      "python3",
      "main.py",
    ]);
  });

  test("namespaces, capabilities and filesystem", () => {
    for (const flag of [
      "--unshare-all --unshare-user --disable-userns --die-with-parent --new-session --cap-drop ALL",
      "--ro-bind /usr /usr",
      "--ro-bind /opt/python /opt/python",
      "--seccomp 5 --info-fd 6",
      "--proc /proc --dev /dev --size 500000 --tmpfs /dev/shm --remount-ro /dev",
      "--size 1000000 --tmpfs /work --symlink /work /tmp",
      "--perms 0644 --file 3 /work/main.py",
      "--dir /work/a --dir /work/a/b --perms 0644 --file 4 /work/a/b/c.txt",
      "--remount-ro / --chdir /work --clearenv --setenv HOME /work --",
      // After /proc is mounted, the host kernel files this machine has are bound over with /dev/null.
      ...MASKED_PROC_FILES.filter((path) => existsSync(path)).map((path) => `--ro-bind /dev/null ${path}`),
    ])
      expect(joined).toContain(flag);
    expect(joined.indexOf("--ro-bind /dev/null /proc/kallsyms")).toBeGreaterThan(
      joined.indexOf("--proc /proc"),
    );
    expect(joined).not.toContain("--share-net");
  });

  test("no setpriv when not root, no timeout when absent", () => {
    const plain = bubblewrapCommand({
      tools: { ...tools, dropTo: null, timeout: null },
      limits,
      tmpfsBytes: 1,
      shmBytes: 1,
      files: [],
      seccompFd: null,
      infoFd: null,
      env: {},
      argv: ["true"],
    });
    expect(plain[0]).toBe("/usr/bin/bwrap");
    expect(plain.join(" ")).not.toMatch(/--seccomp|--info-fd/);
  });
});

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
