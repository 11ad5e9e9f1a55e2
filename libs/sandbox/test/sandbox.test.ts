/** Ordinary programs under bubblewrap: output, stdin, exit codes, files, commands, the pool. */
import { beforeAll, describe, expect, test } from "vitest";
import { createSandbox, type Sandbox } from "../src/index.ts";
import { runPython } from "./helpers.ts";

let sandbox: Sandbox;
beforeAll(async () => {
  // A wall limit far past the CPU limit: 3 CPU-seconds take much longer than 3 s on a loaded machine,
  // and a run must end on the limit it tests. Tests of the wall clock set their own.
  sandbox = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 3 } });
});

describe("ordinary programs", () => {
  test("hello world", async () => {
    const result = await sandbox.run({ language: "python", code: "print('hello, world')" });
    expect(result).toMatchObject({
      status: "ok",
      exitCode: 0,
      signal: null,
      stdout: "hello, world\n",
      stderr: "",
      truncated: false,
      isolation: "bubblewrap",
    });
  });

  test("stdin reaches the program", async () => {
    const code = "import sys\nnums = [int(x) for x in sys.stdin.read().split()]\nprint(sum(nums))";
    const result = await sandbox.run({ language: "python", code, stdin: "1 2 3\n40\n" });
    expect(result.stdout).toBe("46\n");
  });

  test("a non-zero exit is an error with its exit code", async () => {
    const result = await sandbox.run({ language: "python", code: "import sys\nprint('bye')\nsys.exit(3)" });
    expect(result).toMatchObject({ status: "error", exitCode: 3, signal: null, stdout: "bye\n" });
  });

  test("an exception is an error with the traceback on stderr", async () => {
    const result = await sandbox.run({ language: "python", code: "1 / 0" });
    expect(result.status).toBe("error");
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/ZeroDivisionError: division by zero\n$/);
  });

  test("a program killed by another signal is `killed`", async () => {
    const result = await sandbox.run({ language: "python", code: "import os\nos.kill(os.getpid(), 11)" });
    expect(result).toMatchObject({ status: "killed", signal: "SIGSEGV", exitCode: null });
  });

  test("input files are readable, nested directories included, and the program can import them", async () => {
    const code = [
      "import helper",
      "print(open('data/input.txt').read().strip(), helper.double(21))",
      "open('out.txt', 'w').write('written')",
      "print(open('/tmp/out.txt').read())",
    ].join("\n");
    const result = await sandbox.run({
      language: "python",
      code,
      files: { "data/input.txt": "some data\n", "helper.py": "def double(x):\n    return 2 * x\n" },
    });
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("some data 42\nwritten\n");
  });

  test("the working directory is fresh for every run", async () => {
    await sandbox.run({ language: "python", code: "open('leftover', 'w').write('x')" });
    const result = await sandbox.run({
      language: "python",
      code: "import os\nprint(sorted(os.listdir('.')))",
    });
    expect(result.stdout).toBe("['main.py']\n");
  });

  test("commands run without a shell: arguments arrive verbatim", async () => {
    const result = await sandbox.run({ language: "command", argv: ["echo", "a  b", "$HOME", "*"] });
    expect(result).toMatchObject({ status: "ok", stdout: "a  b $HOME *\n" });
  });

  test("a command that does not exist is an error", async () => {
    const result = await sandbox.run({ language: "command", argv: ["no-such-program"] });
    expect(result.status).toBe("error");
    expect(result.stderr).toContain("no-such-program");
  });

  test("the program sees an unprivileged user with no capabilities and no network interfaces but lo", async () => {
    const result = await runPython(sandbox, [
      "import os, socket",
      "caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')]",
      "print(os.getuid(), os.getgid(), caps[0], [n for _, n in socket.if_nameindex()], socket.gethostname())",
    ]);
    expect(result.stdout).toBe("1000 1000 0000000000000000 ['lo'] sandbox\n");
  });

  test("the namespace's init carries no host detail in its environment: PATH alone", async () => {
    const code = "print(open('/proc/1/environ', 'rb').read().split(b'\\0'))";
    const result = await sandbox.run({ language: "python", code });
    expect(result.stdout).toBe("[b'PATH=/usr/bin:/bin', b'']\n");
  });

  test("invalid requests are rejected before running, naming the field", async () => {
    await expect(sandbox.run({ language: "python" })).rejects.toThrow(/code/);
    await expect(sandbox.run({ language: "command", argv: [] })).rejects.toThrow(/argv/);
    await expect(sandbox.run({ language: "python", code: "", files: { "../escape": "x" } })).rejects.toThrow(
      /\.\./,
    );
    await expect(sandbox.run({ language: "python", code: "", files: { "/etc/x": "x" } })).rejects.toThrow(
      /absolute/,
    );
    await expect(sandbox.run({ language: "python", code: "", files: { "main.py": "x" } })).rejects.toThrow(
      /main\.py/,
    );
    await expect(sandbox.run({ language: "python", code: "", limits: { wallMs: -1 } })).rejects.toThrow(
      /wallMs/,
    );
    await expect(sandbox.run({ language: "python", code: "", limits: { cpuSeconds: 0.5 } })).rejects.toThrow(
      /cpuSeconds/,
    );
  });
});

describe("the concurrency pool", () => {
  test("runs at most `concurrency` programs at once and queues the rest", async () => {
    const single = await createSandbox({ concurrency: 1 });
    const code = "import time\nstart = time.time()\ntime.sleep(0.15)\nprint(start, time.time())";
    const runs = [0, 1, 2].map(() => single.run({ language: "python", code }));
    expect(single.queued).toBe(2);
    const spans = (await Promise.all(runs)).map(
      (r) => r.stdout.trim().split(" ").map(Number) as [number, number],
    );
    spans.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < spans.length; i++) expect(spans[i]![0]).toBeGreaterThanOrEqual(spans[i - 1]![1]);
  });

  test("runs in parallel up to the pool size", async () => {
    const double = await createSandbox({ concurrency: 2 });
    // 3 s: the second program's start-up on a loaded machine stays well inside the first one's sleep.
    const code = "import time\nstart = time.time()\ntime.sleep(3)\nprint(start, time.time())";
    const [a, b] = await Promise.all([0, 1].map(() => double.run({ language: "python", code })));
    const [startA, endA] = a!.stdout.trim().split(" ").map(Number) as [number, number];
    const [startB, endB] = b!.stdout.trim().split(" ").map(Number) as [number, number];
    expect(Math.max(startA, startB)).toBeLessThan(Math.min(endA, endB)); // the two spans overlap
  });

  test("defaults to the number of CPUs", async () => {
    const { availableParallelism } = await import("node:os");
    expect(sandbox.concurrency).toBe(availableParallelism());
  });
});
