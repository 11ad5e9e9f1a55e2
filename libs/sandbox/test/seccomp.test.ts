/**
 * The seccomp filter as generated (`src/seccomp.ts`): for both architectures, what the BPF checks
 * first, and that the README documents every denied syscall. What it does to programs is in
 * `escapes.test.ts`. Needs Debian's python3-seccomp (tools/system-deps.sh).
 */
import { readFileSync } from "node:fs";
import { describe, expect, test } from "vitest";
import { buildSeccompFilter, SECCOMP_RULES } from "../src/seccomp.ts";

const AUDIT_ARCH = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
const SECCOMP_RET_KILL_PROCESS = 0x80000000;

function instructions(bpf: Buffer): { code: number; jt: number; jf: number; k: number }[] {
  const out = [];
  for (let i = 0; i < bpf.length; i += 8)
    out.push({ code: bpf.readUInt16LE(i), jt: bpf[i + 2]!, jf: bpf[i + 3]!, k: bpf.readUInt32LE(i + 4) });
  return out;
}

describe.each([
  ["x86_64", { ptrace: 101, memfd_create: 319, keyctl: 250, io_uring_setup: 425 }, []],
  [
    "aarch64",
    { ptrace: 117, memfd_create: 279, keyctl: 219, io_uring_setup: 425 },
    ["modify_ldt", "iopl", "ioperm", "uselib"],
  ],
] as const)("the filter for %s", (arch, numbers, absent) => {
  test("names resolve to this architecture's numbers; names it lacks are reported", async () => {
    const filter = await buildSeccompFilter(arch);
    expect(filter.arch).toBe(arch);
    expect([...filter.absent].sort()).toEqual([...absent].sort());
    for (const [name, nr] of Object.entries(numbers))
      expect(filter.pfc).toContain(`# filter for syscall "${name}" (${nr})`);
    expect(filter.pfc).toContain("action ERRNO(1);"); // EPERM
    expect(filter.pfc).toContain("action ERRNO(38);"); // ENOSYS, for clone3
  });

  test("the BPF checks the architecture first and kills a process that uses another ABI", async () => {
    const code = instructions((await buildSeccompFilter(arch)).bpf);
    // ld [4] (seccomp_data.arch); jeq AUDIT_ARCH_<arch>, else to the kill at the end.
    expect(code[0]).toEqual({ code: 0x20, jt: 0, jf: 0, k: 4 });
    expect(code[1]).toMatchObject({ code: 0x15, k: AUDIT_ARCH[arch] });
    expect(code[1 + 1 + code[1]!.jf]).toEqual({ code: 0x06, jt: 0, jf: 0, k: SECCOMP_RET_KILL_PROCESS });
    if (arch === "x86_64") {
      // x32 syscalls share AUDIT_ARCH_X86_64 and are told apart by bit 30 of the number.
      expect(code).toContainEqual(expect.objectContaining({ code: 0x35, k: 0x40000000 })); // jge
    }
  });
});

test("the README documents every denied syscall", () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  for (const rule of SECCOMP_RULES) for (const name of rule.syscalls) expect(readme).toContain(`\`${name}\``);
});
