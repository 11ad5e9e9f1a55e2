/** The sandbox's command line: the timeout backstop, the drop to nobody, bwrap's flags and prlimit. */
import { existsSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { bubblewrapCommand, MASKED_PROC_FILES, prlimitArgs } from "../src/bubblewrap.ts";
import { defaultLimits } from "../src/limits.ts";

describe("prlimitArgs", () => {
  test("a hard CPU limit one second past the soft one, the process count plus what the sandbox adds", () => {
    const limits = {
      ...defaultLimits,
      cpuSeconds: 2,
      memoryBytes: 1000,
      processes: 3,
      fileBytes: 10,
      openFiles: 7,
    };
    expect(prlimitArgs("/bin/prlimit", limits, 1)).toEqual([
      "/bin/prlimit",
      "--cpu=2:3",
      "--as=1000",
      "--nproc=4",
      "--fsize=10",
      "--nofile=7",
      "--core=0",
      "--",
    ]);
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
