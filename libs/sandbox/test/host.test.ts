/** What the host offers: executables on PATH, and the python programs run with. */
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { findPython, which } from "../src/host.ts";

const root = realpathSync(mkdtempSync(join(tmpdir(), "troupe-host-")));

/** An executable shell script at `path`. */
function script(path: string, body: string): string {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

describe("which", () => {
  test("the first executable of that name along PATH; a file that is not executable is skipped", () => {
    const [a, b, c] = ["a", "b", "c"].map((d) => join(root, "which", d));
    for (const dir of [a!, b!, c!]) mkdirSync(dir, { recursive: true });
    writeFileSync(join(a!, "tool"), "not executable");
    script(join(b!, "tool"), "true");
    script(join(c!, "tool"), "true");
    expect(which("tool", [a, "", b, c].join(":"))).toBe(join(b!, "tool"));
    expect(which("tool", c)).toBe(join(c!, "tool"));
    expect(which("tool", a)).toBeNull();
    expect(which("no-such-tool", [a, b, c].join(":"))).toBeNull();
  });
});

describe("findPython", () => {
  test("an interpreter inside /usr needs no extra binding", () => {
    const python = findPython("/usr/bin/python3");
    expect(python.executable).toBe(realpathSync("/usr/bin/python3"));
    expect(python.prefix).toBeNull();
  });

  test("an interpreter outside /usr (a pyenv shim) is resolved through what it says, its prefix bound", () => {
    const prefix = join(root, "pyenv", "versions", "3.12");
    mkdirSync(join(prefix, "bin"), { recursive: true });
    const real = script(join(prefix, "bin", "python3.12"), "true");
    // The shim answers the probe as the real interpreter would: sys.executable, sys.base_prefix.
    const shim = script(join(root, "shim-python3"), `echo ${real}; echo ${prefix}`);
    expect(findPython(shim)).toEqual({ executable: real, prefix });
  });
});
