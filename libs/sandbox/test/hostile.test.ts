/**
 * Hostile programs: each must be contained and reported with an exact status, and must leave no
 * trace on the host (files, processes, connections). Needs bubblewrap (tools/system-deps.sh).
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createSandbox, type Sandbox } from "../src/index.ts";
import { forkUntilRefused, markedPython, marker, runPython, survivorsAfter } from "./helpers.ts";

let sandbox: Sandbox;
beforeAll(async () => {
  // A wall limit far past the CPU limit: 3 CPU-seconds take much longer than 3 s on a loaded machine,
  // and a run must end on the limit it tests. Tests of the wall clock set their own.
  sandbox = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 3 } });
});

describe("hostile programs under bubblewrap", () => {
  test("the sandbox really is bubblewrap", () => {
    expect(sandbox.isolation).toBe("bubblewrap");
  });

  test("fork bomb: bounded by the process limit, killed at the wall clock, nothing survives", async () => {
    const mark = marker();
    const code = [
      "import os",
      "while True:",
      "    try:",
      "        os.fork()",
      "    except OSError:",
      "        pass",
    ].join("\n");
    const result = await sandbox.run(markedPython(mark, code, { processes: 16, wallMs: 1500 }));
    expect(result.status).toBe("timeout");
    expect(result.signal).toBe("SIGKILL");
    expect(await survivorsAfter(mark)).toEqual([]);
  });

  test("fork bomb: fork fails with EAGAIN once the process limit is reached", async () => {
    const result = await sandbox.run(forkUntilRefused(10));
    expect(result.status).toBe("ok");
    // 10 processes in all: the program and 9 children; the 10th fork fails with EAGAIN (11).
    expect(result.stdout.trim()).toBe("stopped 9 11");
  });

  test("memory bomb: MemoryError under the address-space limit", async () => {
    const code = "hoard = []\nwhile True:\n    hoard.append(bytearray(16 * 2**20))";
    // The wall limit is far off: filling 256 MiB took over 5 s on a 2-core machine at load 14.
    const result = await sandbox.run({
      language: "python",
      code,
      limits: { memoryBytes: 256 * 2 ** 20, wallMs: 60_000 },
    });
    expect(result.status).toBe("memory-limit");
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain("MemoryError");
  });

  test("infinite loop: SIGXCPU at the CPU limit", async () => {
    const result = await sandbox.run({
      language: "python",
      code: "while True:\n    pass",
      limits: { cpuSeconds: 1, wallMs: 30_000 },
    });
    expect(result.status).toBe("cpu-limit");
    expect(result.signal).toBe("SIGXCPU");
  });

  test("a program that ignores SIGXCPU is SIGKILLed at the hard CPU limit", async () => {
    const code = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass";
    const result = await sandbox.run({ language: "python", code, limits: { cpuSeconds: 1, wallMs: 30_000 } });
    expect(result.status).toBe("cpu-limit");
    expect(result.signal).toBe("SIGKILL");
  });

  test("sleeping past the wall clock: timeout (it uses no CPU, so only the wall clock stops it)", async () => {
    const mark = marker();
    const code = "import time\nwhile True:\n    time.sleep(0.05)";
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 700 }));
    expect(result.status).toBe("timeout");
    expect(result.wallMs).toBeGreaterThanOrEqual(700);
    expect(result.wallMs).toBeLessThan(700 + 5_000); // killed at the limit (generous for a loaded machine), not left to run
    expect(await survivorsAfter(mark)).toEqual([]);
  });

  test("writing outside the working directory never reaches the host", async () => {
    const token = randomBytes(6).toString("hex");
    const targets = [
      `/etc/troupe-${token}`,
      `/tmp/host-file-${token}`,
      resolve(`troupe-${token}.txt`), // the repo (vitest runs in libs/sandbox)
      join(tmpdir(), `troupe-${token}-tmpdir`),
      `/usr/lib/troupe-${token}`,
      `/root/troupe-${token}`,
      `/dev/shm/troupe-${token}`,
      `/troupe-${token}`,
    ];
    const code = [
      "import sys",
      "for path in sys.argv[1:]:",
      "    try:",
      "        with open(path, 'w') as f:",
      "            f.write('pwned')",
      "        print(path, 'written')",
      "    except OSError as e:",
      "        print(path, 'refused', e.errno)",
    ].join("\n");
    const result = await sandbox.run({
      language: "command",
      argv: ["/usr/bin/python3", "-c", code, ...targets],
    });
    expect(result.status).toBe("ok");
    for (const path of targets) expect(existsSync(path), path).toBe(false);
    const lines = new Map(
      result.stdout
        .trim()
        .split("\n")
        .map((l) => [l.split(" ")[0], l] as const),
    );
    // /tmp and /dev/shm are the sandbox's own tmpfs, so writing there succeeds *inside* and vanishes after.
    expect(lines.get(`/tmp/host-file-${token}`)).toBe(`/tmp/host-file-${token} written`);
    expect(lines.get(`/dev/shm/troupe-${token}`)).toBe(`/dev/shm/troupe-${token} written`);
    expect(lines.get(`/etc/troupe-${token}`)).toMatch(/refused (2|13|30)$/);
    expect(lines.get(`/usr/lib/troupe-${token}`)).toBe(`/usr/lib/troupe-${token} refused 30`);
  });

  test("environment variables of the parent are invisible", async () => {
    const secret = `secret-${randomBytes(8).toString("hex")}`;
    process.env.TROUPE_TEST_SECRET = secret;
    try {
      const result = await runPython(sandbox, [
        "import os",
        "print(dict(os.environ))",
        "for pid in os.listdir('/proc'):",
        "    try:",
        "        print(open('/proc/%s/environ' % pid, 'rb').read())",
        "    except OSError:",
        "        pass",
      ]);
      expect(result.status).toBe("ok");
      expect(result.stdout).toContain("'HOME': '/work'");
      expect(result.stdout).not.toContain(secret);
      expect(result.stdout).not.toContain("TROUPE_TEST_SECRET");
    } finally {
      delete process.env.TROUPE_TEST_SECRET;
    }
  });

  test("~/.aws/credentials-style secrets under the host HOME are unreachable", async () => {
    const home = mkdtempSync(join(tmpdir(), "troupe-home-"));
    const secret = `AKIA${randomBytes(8).toString("hex")}`;
    mkdirSync(join(home, ".aws"));
    writeFileSync(join(home, ".aws", "credentials"), `[default]\naws_secret_access_key = ${secret}\n`);
    const savedHome = process.env.HOME;
    process.env.HOME = home;
    try {
      const code = [
        "import os, sys",
        "for path in [os.path.expanduser('~/.aws/credentials'), *sys.argv[1:]]:",
        "    try:",
        "        print(path, open(path).read())",
        "    except OSError as e:",
        "        print(path, 'unreadable', e.errno)",
      ].join("\n");
      const argv = [
        "/usr/bin/python3",
        "-c",
        code,
        join(home, ".aws", "credentials"),
        "/root/.aws/credentials",
      ];
      const result = await sandbox.run({ language: "command", argv });
      expect(result.status).toBe("ok");
      expect(result.stdout).not.toContain(secret);
      expect(result.stdout.trim().split("\n")).toEqual([
        "/work/.aws/credentials unreadable 2",
        `${join(home, ".aws", "credentials")} unreadable 2`,
        "/root/.aws/credentials unreadable 2",
      ]);
    } finally {
      process.env.HOME = savedHome;
      rmSync(home, { recursive: true, force: true });
    }
  });

  describe("network", () => {
    let server: Server;
    let port = 0;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((socket) => {
        connections += 1;
        socket.end("hello from the host\n");
      });
      await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((done) => server.close(() => done())));

    test("a TCP server on the host's 127.0.0.1 is unreachable, and so is the outside", async () => {
      const code = [
        "import socket, sys",
        "for host, port in [('127.0.0.1', int(sys.argv[1])), ('1.1.1.1', 80)]:",
        "    try:",
        "        socket.create_connection((host, port), timeout=1).recv(100)",
        "        print(host, 'connected')",
        "    except OSError as e:",
        "        print(host, 'failed', e.errno)",
      ].join("\n");
      const result = await sandbox.run({
        language: "command",
        argv: ["/usr/bin/python3", "-c", code, String(port)],
      });
      expect(result.status).toBe("ok");
      // 111 ECONNREFUSED: the sandbox's own loopback has nothing listening; 101 ENETUNREACH.
      expect(result.stdout.trim().split("\n")).toEqual(["127.0.0.1 failed 111", "1.1.1.1 failed 101"]);
      expect(connections).toBe(0);
    });
  });

  test("huge output: killed at the cap, output truncated to exactly the cap", async () => {
    const code = "while True:\n    print('x' * 1000)";
    const result = await sandbox.run({ language: "python", code, limits: { outputBytes: 64 * 1024 } });
    expect(result.status).toBe("output-limit");
    expect(result.truncated).toBe(true);
    expect(result.stdout.length).toBe(64 * 1024);
  });

  test("huge output on stderr is capped too", async () => {
    const code = "import sys\nwhile True:\n    sys.stderr.write('e' * 4096)";
    const result = await sandbox.run({ language: "python", code, limits: { outputBytes: 10_000 } });
    expect(result.status).toBe("output-limit");
    expect(result.stderr.length).toBe(10_000);
  });

  test("killing the parent (pid 1 of the namespace) does nothing", async () => {
    const code =
      "import os, time\nos.kill(os.getppid(), 9)\ntime.sleep(0.2)\nprint('alive, parent', os.getppid())";
    const result = await sandbox.run({ language: "python", code });
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("alive, parent 1\n");
  });

  test("kill -9 -1 only reaches the sandbox's own processes", async () => {
    const result = await sandbox.run({
      language: "command",
      argv: ["/bin/sh", "-c", "kill -9 -1; echo survived"],
    });
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("survived\n");
    expect(process.kill(process.pid, 0)).toBe(true); // we are still here
  });

  test("setsid() escape from the process group: killed at the deadline, no process survives", async () => {
    const mark = marker();
    const sleepSeconds = `1000.${Number.parseInt(mark.slice(1, 9), 16)}`; // a marker in sleep's argv
    const code = [
      "import os, time",
      "if os.fork() == 0:",
      "    os.setsid()",
      `    os.execv('/usr/bin/sleep', ['sleep', '${sleepSeconds}'])`,
      "try:",
      "    os.setsid()",
      "except OSError:",
      "    pass  # already a session leader (bwrap --new-session)",
      "time.sleep(1000)",
    ].join("\n");
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 800 }));
    expect(result.status).toBe("timeout");
    expect(await survivorsAfter(mark)).toEqual([]);
    expect(await survivorsAfter(sleepSeconds)).toEqual([]);
  });

  test("filling the temp disk stops at the tmpfs size", async () => {
    const fileBytes = 1024 * 1024;
    const program = [
      "import errno",
      "total = 0",
      "try:",
      "    for i in range(1000):",
      "        with open('/tmp/fill-%d' % i, 'wb') as f:",
      "            for _ in range(4):",
      "                f.write(b'x' * 65536)",
      "                f.flush()",
      "                total += 65536",
      "except OSError as e:",
      "    print(total, errno.errorcode[e.errno])",
    ];
    const result = await runPython(sandbox, program, { fileBytes });
    expect(result.status).toBe("ok");
    const [written, error] = result.stdout.trim().split(" ");
    expect(error).toBe("ENOSPC");
    // The tmpfs holds fileBytes plus room for the program itself (one page per input file).
    expect(Number(written)).toBeGreaterThanOrEqual(fileBytes - 65536);
    expect(Number(written)).toBeLessThanOrEqual(fileBytes + 4096 + program.join("\n").length);
  });

  test("one file past RLIMIT_FSIZE fails with EFBIG", async () => {
    const result = await runPython(
      sandbox,
      [
        "try:",
        "    open('big', 'wb').write(b'x' * 200_000)",
        "except OSError as e:",
        "    print('refused', e.errno)",
      ],
      { fileBytes: 100_000 },
    );
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("refused 27\n");
  });

  test("a daemonized double fork does not outlive the run", async () => {
    const mark = marker();
    const flag = join(tmpdir(), `troupe-daemon-${mark}`);
    const daemon = `# ${mark}\nimport time\ntime.sleep(6)\nopen(${JSON.stringify(flag)}, 'w').write('escaped')`;
    const code = [
      "import os",
      "if os.fork() == 0:",
      "    os.setsid()",
      "    if os.fork() == 0:",
      "        os.closerange(0, 3)",
      `        os.execv('/usr/bin/python3', ['python3', '-c', ${JSON.stringify(daemon)}])`,
      "    os._exit(0)",
      "print('parent done')",
    ].join("\n");
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 10_000 }));
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("parent done\n");
    expect(result.wallMs).toBeLessThan(5_000); // the daemon (sleeping 6 s) did not hold the run open
    expect(await survivorsAfter(mark)).toEqual([]);
    await new Promise((r) => setTimeout(r, Math.max(0, 6_300 - result.wallMs)));
    expect(existsSync(flag)).toBe(false);
  });

  test("nested user namespaces are refused (they would allow unbounded tmpfs mounts)", async () => {
    const result = await sandbox.run({
      language: "command",
      argv: ["/usr/bin/unshare", "--user", "--map-root-user", "id"],
    });
    expect(result.status).toBe("error");
    expect(result.stdout).toBe("");
  });
});
