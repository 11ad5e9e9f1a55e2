/**
 * One memory bound for the whole run (`src/cgroup.ts`, `perProcessShare` in `src/limits.ts`).
 *
 * The hostile test runs wherever the suite runs, with the bound this machine gives (a cgroup v2 or
 * v1 per run, found) and with the division between processes (`cgroup: false`). The named cgroup
 * v2 directory runs only where TROUPE_SANDBOX_CGROUP names one (e.g. `mkdir /sys/fs/cgroup/troupe
 * && echo "+memory +pids" > /sys/fs/cgroup/cgroup.subtree_control` as root on a cgroup v2 machine).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bubblewrapCommand } from "../src/bubblewrap.ts";
import {
  cgroupParentProblem,
  findRunCgroupParent,
  joinCgroupArgs,
  parseCgroupMounts,
  parseProcCgroup,
} from "../src/cgroup.ts";
import { createSandbox, defaultLimits, type Sandbox, SandboxUnavailableError } from "../src/index.ts";
import {
  forkUntilRefused,
  markedPython,
  marker,
  processesAfter,
  processesWith,
  runPython,
} from "./helpers.ts";

const MiB = 2 ** 20;

describe("cgroup configuration", () => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-not-a-cgroup-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("a directory outside cgroup v2 is refused with the reason", () => {
    expect(cgroupParentProblem(dir)).toBe(`cgroup ${dir} is not in a cgroup v2 hierarchy`);
    expect(cgroupParentProblem(join(dir, "missing"))).toMatch(/ENOENT/);
  });

  test("createSandbox refuses an unusable cgroup instead of running without it", async () => {
    await expect(createSandbox({ cgroup: dir })).rejects.toThrow(SandboxUnavailableError);
    await expect(createSandbox({ cgroup: dir })).rejects.toThrow(/not in a cgroup v2 hierarchy/);
  });

  test("the first process joins the run's cgroup, then execs the timeout backstop", () => {
    const argv = bubblewrapCommand({
      tools: {
        bwrap: "/usr/bin/bwrap",
        prlimit: "/usr/bin/prlimit",
        timeout: "/usr/bin/timeout",
        setpriv: null,
        dropTo: null,
        extraReadOnly: [],
      },
      limits: defaultLimits,
      tmpfsBytes: 1,
      shmBytes: 1,
      files: [],
      seccompFd: null,
      infoFd: null,
      cgroupProcs: [
        "/sys/fs/cgroup/memory/troupe-1/cgroup.procs",
        "/sys/fs/cgroup/pids/troupe-1/cgroup.procs",
      ],
      env: {},
      argv: ["true"],
    });
    expect(argv.slice(0, 7)).toEqual([
      ...joinCgroupArgs([
        "/sys/fs/cgroup/memory/troupe-1/cgroup.procs",
        "/sys/fs/cgroup/pids/troupe-1/cgroup.procs",
      ]),
      "/usr/bin/timeout",
    ]);
    expect(argv[3]).toBe("2");
  });

  test("the joining shell writes its pid to every cgroup.procs, then execs the rest", async () => {
    const { execFileSync } = await import("node:child_process");
    const files = [join(dir, "a.procs"), join(dir, "b.procs")];
    const out = execFileSync(
      joinCgroupArgs(files)[0]!,
      [...joinCgroupArgs(files).slice(1), "/bin/sh", "-c", "echo $$"],
      {
        encoding: "utf8",
      },
    );
    const pid = out.trim();
    expect(files.map((f) => readFileSync(f, "utf8").trim())).toEqual([pid, pid]);
  });

  test("/proc/self/cgroup and mountinfo: the controllers' paths and mounts", () => {
    expect(
      parseProcCgroup("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/921a\n2:cpu,cpuacct:/x\n0::/\n"),
    ).toEqual(
      new Map([
        ["name=systemd", "/"],
        ["pids", "/"],
        ["memory", "/process_api/921a"],
        ["cpu", "/x"],
        ["cpuacct", "/x"],
        ["", "/"],
      ]),
    );
    expect(
      parseCgroupMounts(
        [
          "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755",
          "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
          "41 31 0:38 /outer /sys/fs/cgroup/uni\\040fied rw,relatime - cgroup2 cgroup2 rw",
        ].join("\n"),
      ),
    ).toEqual([
      { root: "/", mountPoint: "/sys/fs/cgroup/memory", fsType: "cgroup", controllers: ["rw", "memory"] },
      { root: "/outer", mountPoint: "/sys/fs/cgroup/uni fied", fsType: "cgroup2", controllers: [] },
    ]);
  });

  test("found: cgroup v2 when delegated, else this process's v1 memory (and pids) cgroups", () => {
    const memory = join(dir, "memory");
    const pids = join(dir, "pids");
    mkdirSync(join(memory, "job"), { recursive: true });
    mkdirSync(join(pids, "job"), { recursive: true });
    writeFileSync(join(memory, "job", "memory.limit_in_bytes"), "9223372036854771712\n");
    const procCgroup = "8:pids:/job\n4:memory:/job\n0::/\n";
    const mountinfo = [
      `35 31 0:32 / ${memory} rw - cgroup cgroup rw,memory`,
      `39 31 0:36 / ${pids} rw - cgroup cgroup rw,pids`,
      `41 31 0:38 / ${dir} rw - cgroup2 cgroup2 rw`,
    ].join("\n");
    // The v2 "mount" here is a plain directory: skipped with its reason, v1 is used.
    expect(findRunCgroupParent(procCgroup, mountinfo)).toEqual({
      version: 1,
      memoryDir: join(memory, "job"),
      pidsDir: join(pids, "job"),
    });
    expect(findRunCgroupParent("0::/\n", mountinfo)).toBe(
      `cgroup ${dir} is not in a cgroup v2 hierarchy; no cgroup v1 memory controller is mounted for this process`,
    );
    expect(findRunCgroupParent("4:memory:/elsewhere\n", mountinfo)).toBe(
      `cgroup ${join(memory, "elsewhere")} has no memory.limit_in_bytes`,
    );
  });
});

/**
 * Eight children, each holding 400 MiB it has written (so it is resident), under a 512 MiB budget:
 * 3.2 GiB if the limit were per process. Children that cannot allocate make the program fail.
 */
const HOARDERS = [
  "import os, sys, time",
  "children = []",
  "for _ in range(8):",
  "    pid = os.fork()",
  "    if pid == 0:",
  "        hoard = b'x' * (400 << 20)",
  "        time.sleep(3)",
  "        os._exit(0)",
  "    children.append(pid)",
  "failed = sum(os.waitpid(pid, 0)[1] != 0 for pid in children)",
  "sys.exit(1 if failed else 0)",
].join("\n");

/** The lowest MemAvailable of the host while `run` lasts, sampled every 10 ms. */
async function lowestAvailable(run: Promise<unknown>): Promise<{ before: number; lowest: number }> {
  const available = () =>
    Number(/^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync("/proc/meminfo", "utf8"))![1]) * 1024;
  const before = available();
  let lowest = before;
  const sampler = setInterval(() => {
    lowest = Math.min(lowest, available());
  }, 10);
  try {
    await run;
  } finally {
    clearInterval(sampler);
  }
  return { before, lowest };
}

/** What the test allows on top of the budget: the processes outside it and other tests' noise. */
const SLACK_BYTES = 512 * MiB;

describe.each([
  ["the bound this machine gives", {}],
  ["cgroup: false, the budget divided", { cgroup: false as const }],
])("one memory bound for the whole run: %s", (_, options) => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox({ ...options, limits: { wallMs: 30_000, cpuSeconds: 10 } });
  });

  test("eight processes each under the per-process limit cannot take more than the budget", async () => {
    const memoryBytes = 512 * MiB;
    let status = "";
    const { before, lowest } = await lowestAvailable(
      sandbox.run({ language: "python", code: HOARDERS, limits: { memoryBytes } }).then((r) => {
        status = r.status;
      }),
    );
    expect(status, sandbox.memoryBound).toBe("memory-limit");
    expect(before - lowest, sandbox.memoryBound).toBeLessThanOrEqual(memoryBytes + SLACK_BYTES);
  });
});

const found = findRunCgroupParent();

/** Five children that leave the run's session and sleep: only the run's cgroup can end them. */
const SETSID_SLEEPERS =
  "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        os.setsid()\n        break\ntime.sleep(60)";

/** A run's processes and threads together stop at its limit (10: the program and 9 forks at most). */
async function expectProcessLimit(sandbox: Sandbox): Promise<void> {
  const result = await sandbox.run(forkUntilRefused(10));
  expect(result.status).toBe("ok");
  expect(Number(result.stdout.split(" ")[1])).toBeLessThanOrEqual(9);
}

describe.runIf(typeof found !== "string")("runs in their own cgroup, found", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 5 } });
  });
  /**
   * The run cgroups that hold a process carrying `mark`, watched while `run` lasts (other test
   * files make and remove their own run cgroups beside this one at the same time).
   */
  async function cgroupsOf(mark: string, run: Promise<unknown>): Promise<string[]> {
    if (typeof found === "string") return [];
    const parents = found.version === 2 ? [found.dir] : [found.memoryDir, found.pidsDir ?? found.memoryDir];
    const seen = new Set<string>();
    const look = () => {
      const marked = new Set(processesWith(mark).map(String));
      for (const parent of parents)
        for (const name of readdirSync(parent).filter((n) => n.startsWith("troupe-")))
          try {
            const procs = readFileSync(join(parent, name, "cgroup.procs"), "utf8").split("\n");
            if (procs.some((pid) => marked.has(pid))) seen.add(join(parent, name));
          } catch {} // removed while we looked
    };
    const watcher = setInterval(look, 20);
    try {
      await run;
    } finally {
      clearInterval(watcher);
    }
    return [...seen];
  }

  test("the sandbox says which cgroup bounds its runs", () => {
    expect(sandbox.memoryBound).toMatch(/^cgroup v[12] \(/);
  });

  test("processes and threads of the whole run stop at the limit", () => expectProcessLimit(sandbox));

  test("nothing is left, in the cgroup or outside it, and the run's cgroups are removed", async () => {
    const mark = marker();
    let status = "";
    const cgroups = await cgroupsOf(
      mark,
      sandbox.run(markedPython(mark, SETSID_SLEEPERS, { wallMs: 1500 })).then((r) => {
        status = r.status;
      }),
    );
    expect(status).toBe("timeout");
    expect(cgroups.length).toBeGreaterThan(0);
    expect(await processesAfter(mark, 1000)).toEqual([]);
    expect(cgroups.filter((dir) => existsSync(dir))).toEqual([]);
  });
});

const parent = process.env.TROUPE_SANDBOX_CGROUP;

describe.runIf(parent !== undefined && parent !== "")("runs in their own cgroup v2", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox({ cgroup: parent, limits: { wallMs: 30_000, cpuSeconds: 5 } });
  });
  const runCgroups = () => readdirSync(parent!).filter((name) => name.startsWith("troupe-"));

  test("memory is one budget for all processes: four 200 MiB children under 256 MiB is memory-limit", async () => {
    const result = await runPython(
      sandbox,
      [
        "import os, time",
        "for _ in range(4):",
        "    if os.fork() == 0:",
        "        hoard = bytearray(200 << 20)",
        "        time.sleep(30)",
        "        os._exit(0)",
        "for _ in range(4):",
        "    os.wait()",
      ],
      { memoryBytes: 256 * 2 ** 20 },
    );
    expect(result.status).toBe("memory-limit");
  });

  test("processes and threads of the whole run stop at the limit", () => expectProcessLimit(sandbox));

  test("nothing is left, in the cgroup or outside it, and the run's cgroup is removed", async () => {
    const mark = marker();
    const result = await sandbox.run(markedPython(mark, SETSID_SLEEPERS, { wallMs: 1500 }));
    expect(result.status).toBe("timeout");
    expect(await processesAfter(mark, 1000)).toEqual([]);
    expect(runCgroups()).toEqual([]);
  });
});

/**
 * Socket buffers are kernel memory that no RLIMIT_AS counts: without a cgroup one process queued
 * 471 MiB in socket pairs under a 128 MiB budget. So a run without a cgroup cannot make a socket
 * (the seccomp filter's `NO_CGROUP_RULES`); with one, sockets work and their buffers are charged.
 */
const FILL_SOCKETS = [
  "import socket, sys",
  "pairs = []",
  "try:",
  "    for _ in range(16):",
  "        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)",
  "        a.setblocking(False)",
  "        pairs.append((a, b))",
  "        try:",
  "            while True:",
  "                a.send(b'x' * 1024)",
  "        except BlockingIOError:",
  "            pass",
  "except PermissionError as error:",
  "    print('refused', error.errno)",
  "    sys.exit(3)",
  "print('queued', len(pairs))",
].join("\n");

describe("socket buffers", () => {
  test("cgroup: false refuses sockets (a program's socket memory has no bound there)", async () => {
    const sandbox = await createSandbox({ cgroup: false, limits: { wallMs: 30_000, cpuSeconds: 10 } });
    const result = await sandbox.run({
      language: "python",
      code: FILL_SOCKETS,
      limits: { memoryBytes: 128 * MiB },
    });
    expect([result.status, result.exitCode, result.stdout.trim()]).toEqual(["error", 3, "refused 1"]);
  });

  test.runIf(typeof found !== "string")(
    "with the run's cgroup, sockets work and stay within the budget",
    async () => {
      const sandbox = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 10 } });
      const memoryBytes = 128 * MiB;
      let result: Awaited<ReturnType<Sandbox["run"]>> | undefined;
      const { before, lowest } = await lowestAvailable(
        sandbox.run({ language: "python", code: FILL_SOCKETS, limits: { memoryBytes } }).then((r) => {
          result = r;
        }),
      );
      expect(["ok", "memory-limit"]).toContain(result!.status);
      if (result!.status === "ok") expect(result!.stdout.trim()).toBe("queued 16");
      expect(before - lowest).toBeLessThanOrEqual(memoryBytes + SLACK_BYTES);
    },
  );
});
