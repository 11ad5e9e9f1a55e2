/** Descriptors the test runner inherited must not reach the sandboxed program. */
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

test("a descriptor inherited without close-on-exec is /dev/null inside the sandbox", async () => {
  const fixture = fileURLToPath(new URL("./fixtures/list-fds.ts", import.meta.url));
  // The child Node process gets fd 50: a dup (by the shell, so without close-on-exec) of the write
  // end of a pipe we read, as a CI runner might leave one.
  const child = spawn("/bin/bash", ["-c", 'exec "$0" --import tsx "$1" 50>&3', process.execPath, fixture], {
    stdio: ["ignore", "pipe", "inherit", "pipe"],
  });
  let stdout = "";
  let leaked = "";
  child.stdout!.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stdio[3]!.on("data", (chunk: Buffer) => (leaked += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  expect(code).toBe(0);
  const report = JSON.parse(stdout) as { leakable: number[]; stdout: string; stderr: string };
  expect(report.leakable).toContain(50); // the fixture really had something to leak
  expect(report.stderr).toBe("");
  expect(leaked).toBe(""); // nothing the program wrote reached our pipe
  const lines = report.stdout.trim().split("\n");
  expect(lines.slice(0, 3)).toEqual(["0 socket", "1 socket", "2 socket"]);
  expect(lines).toContain("50 /dev/null");
  for (const line of lines.slice(3)) expect(line).toMatch(/ \/dev\/null$/);
});
