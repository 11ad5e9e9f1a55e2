/**
 * The optional cgroup v2 per run (`src/cgroup.ts`). The checks of the configuration run
 * everywhere; the runs need a delegated cgroup v2 directory with the memory and pids controllers,
 * named by TROUPE_SANDBOX_CGROUP (e.g. `mkdir /sys/fs/cgroup/troupe && echo "+memory +pids" >
 * /sys/fs/cgroup/cgroup.subtree_control` as root on a cgroup v2 machine), and are skipped without it.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { bubblewrapCommand } from "../src/bubblewrap.ts";
import { cgroupParentProblem } from "../src/cgroup.ts";
import { createSandbox, defaultLimits, type Sandbox, SandboxUnavailableError } from "../src/index.ts";
import { forkUntilRefused, markedPython, marker, processesAfter } from "./helpers.ts";

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
      cgroupProcs: "/sys/fs/cgroup/troupe/troupe-1/cgroup.procs",
      env: {},
      argv: ["true"],
    });
    expect(argv.slice(0, 5)).toEqual([
      "/bin/sh",
      "-c",
      'echo $$ > "$0" && exec "$@"',
      "/sys/fs/cgroup/troupe/troupe-1/cgroup.procs",
      "/usr/bin/timeout",
    ]);
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
    const code = [
      "import os, time",
      "for _ in range(4):",
      "    if os.fork() == 0:",
      "        hoard = bytearray(200 << 20)",
      "        time.sleep(30)",
      "        os._exit(0)",
      "for _ in range(4):",
      "    os.wait()",
    ].join("\n");
    const result = await sandbox.run({ language: "python", code, limits: { memoryBytes: 256 * 2 ** 20 } });
    expect(result.status).toBe("memory-limit");
  });

  test("processes and threads of the whole run stop at the limit", async () => {
    const result = await sandbox.run(forkUntilRefused(10));
    expect(result.status).toBe("ok");
    expect(Number(result.stdout.split(" ")[1])).toBeLessThanOrEqual(9);
  });

  test("nothing is left, in the cgroup or outside it, and the run's cgroup is removed", async () => {
    const mark = marker();
    const code =
      "import os, time\nfor _ in range(5):\n    if os.fork() == 0:\n        os.setsid()\n        break\ntime.sleep(60)";
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 1500 }));
    expect(result.status).toBe("timeout");
    expect(await processesAfter(mark, 1000)).toEqual([]);
    expect(runCgroups()).toEqual([]);
  });
});
