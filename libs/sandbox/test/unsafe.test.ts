/**
 * When bubblewrap cannot run: a clear refusal by default, and the `unsafe: true` rlimits-only
 * fallback, which still enforces limits but (shown here) does not contain a setsid escape.
 */
import { beforeAll, describe, expect, test } from "vitest";
import { createSandbox, type Sandbox, SandboxUnavailableError } from "../src/index.ts";
import { markedPython, marker, processesWith, survivorsAfter } from "./helpers.ts";

const MISSING_BWRAP = "/nonexistent/bwrap";

test("without bubblewrap, createSandbox refuses and says why and how to fix it", async () => {
  const attempt = createSandbox({ bwrap: MISSING_BWRAP });
  await expect(attempt).rejects.toBeInstanceOf(SandboxUnavailableError);
  await expect(attempt).rejects.toThrow(/\/nonexistent\/bwrap` does not exist/);
  await expect(attempt).rejects.toThrow(/apt-get install bubblewrap/);
  await expect(attempt).rejects.toThrow(/unsafe: true/);
});

test("bad options are rejected naming the field", async () => {
  await expect(createSandbox({ concurrency: 0 })).rejects.toThrow(/concurrency/);
  await expect(createSandbox({ limits: { memoryBytes: -5 } })).rejects.toThrow(/memoryBytes/);
});

describe("unsafe: true falls back to rlimits only", () => {
  let sandbox: Sandbox;
  beforeAll(async () => {
    sandbox = await createSandbox({
      bwrap: MISSING_BWRAP,
      unsafe: true,
      limits: { wallMs: 15_000, cpuSeconds: 2 }, // wall: only a hang stops a test, load does not
    });
  });

  test("is labelled unsafe and says why", () => {
    expect(sandbox.isolation).toBe("unsafe-rlimits");
    expect(sandbox.unsafeBecause).toContain("does not exist");
  });

  test("runs programs with files and stdin, in a temp dir that is removed afterwards", async () => {
    const code = "import os, sys\nprint(open('data.txt').read(), sys.stdin.read(), os.getcwd())";
    const result = await sandbox.run({
      language: "python",
      code,
      stdin: "in",
      files: { "data.txt": "file" },
    });
    expect(result).toMatchObject({ status: "ok", isolation: "unsafe-rlimits" });
    const [file, input, cwd] = result.stdout.trim().split(" ");
    expect([file, input]).toEqual(["file", "in"]);
    const { existsSync } = await import("node:fs");
    expect(existsSync(cwd!)).toBe(false);
  });

  test("the environment is still cleared", async () => {
    process.env.TROUPE_UNSAFE_SECRET = "visible?";
    try {
      const result = await sandbox.run({ language: "python", code: "import os\nprint(sorted(os.environ))" });
      expect(result.stdout).toBe("['HOME', 'LANG', 'PATH', 'TMPDIR']\n");
    } finally {
      delete process.env.TROUPE_UNSAFE_SECRET;
    }
  });

  test("CPU, memory and output limits still hold", async () => {
    const cpu = await sandbox.run({
      language: "python",
      code: "while True:\n    pass",
      limits: { cpuSeconds: 1, wallMs: 30_000 },
    });
    expect(cpu).toMatchObject({ status: "cpu-limit", signal: "SIGXCPU" });
    const memory = await sandbox.run({
      language: "python",
      code: "x = bytearray(2**31)",
      limits: { memoryBytes: 256 * 2 ** 20 },
    });
    expect(memory.status).toBe("memory-limit");
    const output = await sandbox.run({
      language: "python",
      code: "while True:\n    print('y' * 100)",
      limits: { outputBytes: 5000 },
    });
    expect(output).toMatchObject({ status: "output-limit", truncated: true });
  });

  test("the process group is killed at the deadline", async () => {
    const mark = marker();
    const code = "import os, time\nos.fork()\ntime.sleep(100)";
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 500 }));
    expect(result.status).toBe("timeout");
    expect(await survivorsAfter(mark)).toEqual([]);
  });

  test("…but a setsid() escape survives: this mode is not a security boundary", async () => {
    const mark = marker();
    // The parent waits for the child's setsid() (a pipe), else on a loaded machine it can exit and
    // have its group killed before the child has left it.
    const code = [
      "import os, time",
      "r, w = os.pipe()",
      "if os.fork() == 0:",
      "    os.setsid()",
      "    os.write(w, b'x')",
      "    time.sleep(30)",
      "    os._exit(0)",
      "os.read(r, 1)",
      "print('done')",
    ].join("\n");
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 15_000 }));
    expect(result.status).toBe("ok");
    const escaped = processesWith(mark);
    expect(escaped.length).toBe(1); // the same check finds nothing under bubblewrap (hostile.test.ts)
    for (const pid of escaped) process.kill(pid, "SIGKILL");
  });
});
