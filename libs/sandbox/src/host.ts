/**
 * What the host offers: bubblewrap, a python3, util-linux's prlimit/setpriv, coreutils' timeout.
 * Found once when a sandbox is created.
 */
import { execFileSync } from "node:child_process";
import { accessSync, constants, existsSync, realpathSync } from "node:fs";
import { delimiter, join } from "node:path";

/** The first executable called `name` on PATH, or null. */
export function which(name: string, path = process.env.PATH ?? "/usr/bin:/bin"): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

export interface PythonInstall {
  /** Path of the interpreter, as it will be exec'd (inside the sandbox it is at the same path). */
  readonly executable: string;
  /** Directory to bind read-only when the interpreter lives outside /usr (a pyenv build). */
  readonly prefix: string | null;
}

/**
 * The python to run programs with: the given one, else the distribution's /usr/bin/python3 (it
 * needs nothing outside /usr), else `python3` on PATH resolved through pyenv shims to its real
 * prefix (`sys.base_prefix`), which the sandbox then binds read-only.
 */
export function findPython(explicit?: string): PythonInstall {
  const candidate = explicit ?? (existsSync("/usr/bin/python3") ? "/usr/bin/python3" : which("python3"));
  if (candidate === null) throw new Error("sandbox: no python3 found (install python3, or pass `python`)");
  // pyenv's shim is a bash script; ask the interpreter where it really is.
  const [executable, prefix] = execFileSync(
    candidate,
    ["-c", "import sys; print(sys.executable); print(sys.base_prefix)"],
    { encoding: "utf8", timeout: 10_000 },
  )
    .trim()
    .split("\n");
  const realExecutable = realpathSync(executable!);
  const realPrefix = realpathSync(prefix!);
  const insideUsr = realPrefix === "/usr" || realPrefix.startsWith("/usr/");
  return { executable: realExecutable, prefix: insideUsr ? null : realPrefix };
}
