/**
 * Ending a sandbox: bwrap's --info-fd report parsed, and a real PID namespace (made by bwrap, with
 * a shell and two sleepers in it) found by its inode and killed, every member gone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { describe, expect, test } from "vitest";
import { which } from "../src/host.ts";
import { isZombie, killPidNamespace, parseSandboxInfo, processesInPidNamespace } from "../src/teardown.ts";

test("bwrap's --info-fd report: init's pid and the pid namespace, or nothing usable", () => {
  const report =
    '{\n    "child-pid": 4242,\n    "cgroup-namespace": 1,\n    "pid-namespace": 4026532300\n}\n';
  expect(parseSandboxInfo(report)).toEqual({ initPid: 4242, pidNamespace: 4026532300 });
  expect(parseSandboxInfo("")).toBeNull();
  expect(parseSandboxInfo('{"child-pid": 4242')).toBeNull();
  expect(parseSandboxInfo('{"child-pid": 1, "pid-namespace": 5}')).toBeNull(); // never our own pid 1
  expect(parseSandboxInfo('{"child-pid": "4242", "pid-namespace": 5}')).toBeNull();
});

test("isZombie: a live process is not; a pid that does not exist counts as gone", () => {
  expect(isZombie(process.pid)).toBe(false);
  expect(isZombie(2 ** 22 + 1)).toBe(true); // above pid_max's ceiling: never a process
});

/** A bwrap PID namespace holding `sh` (as bwrap's init's child) and two `sleep 600`. */
async function namespaceWithSleepers(): Promise<{
  child: ChildProcess;
  initPid: number;
  pidNamespace: number;
}> {
  const bwrap = which("bwrap");
  if (bwrap === null) throw new Error("bwrap is not installed (tools/system-deps.sh)");
  const child = spawn(
    bwrap,
    ["--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid", "--die-with-parent"].concat([
      "--info-fd",
      "3",
      "sh",
      "-c",
      "sleep 600 & sleep 600 & wait",
    ]),
    { stdio: ["ignore", "ignore", "ignore", "pipe"] },
  );
  let report = "";
  child.stdio[3]!.on("data", (chunk: Buffer) => (report += chunk.toString()));
  await new Promise((resolve) => child.stdio[3]!.on("end", resolve));
  const info = parseSandboxInfo(report);
  if (info === null) throw new Error(`bwrap's report was not usable: ${report}`);
  return { child, ...info };
}

describe("a PID namespace", () => {
  test("its members are found by the namespace's inode, and killPidNamespace leaves none", async () => {
    const { child, initPid, pidNamespace } = await namespaceWithSleepers();
    try {
      // init, sh and two sleepers, once sh has started both.
      for (let i = 0; i < 500 && processesInPidNamespace(pidNamespace).length < 4; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      const members = processesInPidNamespace(pidNamespace);
      expect(members).toHaveLength(4);
      expect(members).toContain(initPid);
      expect(members).not.toContain(process.pid);

      // A report whose namespace is not init's (a reused pid) kills nothing.
      expect(await killPidNamespace({ initPid, pidNamespace: pidNamespace + 1 })).toEqual({
        initWasAlive: false,
        survivors: [],
      });
      expect(processesInPidNamespace(pidNamespace)).toHaveLength(4);

      expect(await killPidNamespace({ initPid, pidNamespace })).toEqual({
        initWasAlive: true,
        survivors: [],
      });
      expect(processesInPidNamespace(pidNamespace)).toEqual([]);
      // Safe to call again once the sandbox has ended.
      expect(await killPidNamespace({ initPid, pidNamespace })).toEqual({
        initWasAlive: false,
        survivors: [],
      });
    } finally {
      child.kill("SIGKILL");
    }
  });
});
