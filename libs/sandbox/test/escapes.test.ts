/**
 * Escapes found by hostile testing, beside `hostile.test.ts`: a program that outlived its run by
 * ptracing the namespace's init, memory that RLIMIT_AS does not count (memfd, SysV shm), and the
 * rest of what the seccomp filter denies (`src/seccomp.ts`). Each of these programs succeeded
 * before the filter and the teardown existed. And ordinary programs (threads, subprocesses,
 * multiprocessing, numpy) still work under them.
 */
import { existsSync } from "node:fs";
import { arch } from "node:os";
import { beforeAll, describe, expect, test } from "vitest";
import { MASKED_PROC_FILES } from "../src/bubblewrap.ts";
import { createSandbox, type Sandbox } from "../src/index.ts";
import { markedPython, marker, processesAfter, processesWith, runPython } from "./helpers.ts";

let sandbox: Sandbox;
/** The same sandbox without the seccomp filter: the PID-namespace teardown alone. */
let teardownOnly: Sandbox;
beforeAll(async () => {
  sandbox = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 3 } });
  teardownOnly = await createSandbox({ limits: { wallMs: 30_000, cpuSeconds: 3 } }, { seccomp: false });
});

/** Python: `call(name, *args)` makes a raw syscall and returns "ok" or the errno's name. */
const SYSCALLS = `
import ctypes, errno, os, platform
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {
    "x86_64": dict(ptrace=101, process_vm_readv=310, keyctl=250, add_key=248, request_key=249, bpf=321,
                   perf_event_open=298, userfaultfd=323, io_uring_setup=425, memfd_secret=447, unshare=272,
                   setns=308, mount=165, personality=135, clone3=435, shmget=29, msgget=68, kcmp=312),
    "aarch64": dict(ptrace=117, process_vm_readv=270, keyctl=219, add_key=217, request_key=218, bpf=280,
                    perf_event_open=241, userfaultfd=282, io_uring_setup=425, memfd_secret=447, unshare=97,
                    setns=268, mount=40, personality=92, clone3=435, shmget=194, msgget=186, kcmp=272),
}[platform.machine()]
def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]
`;

/**
 * The attack that was reported (x86_64): attach to init (pid 1, bwrap), make it run
 * prctl(PR_SET_PDEATHSIG, 0) by pointing its registers at the `syscall` instruction it is stopped
 * after, and keep it stopped under our trace. Init then no longer dies with bwrap's monitor, and
 * the program (its child) lives on with it: before the fix both were alive long after the run
 * reported `timeout`.
 */
const PTRACE_INIT = `${SYSCALLS}
import sys, time
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
class Regs(ctypes.Structure):
    _fields_ = [(n, ctypes.c_ulonglong) for n in (
        "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
        "fs_base gs_base ds es fs gs").split()]
def ptrace(request, pid, addr=None, data=None):
    ctypes.set_errno(0)
    result = libc.ptrace(request, pid, addr, data)
    if result == -1 and ctypes.get_errno():
        raise OSError(ctypes.get_errno(), "ptrace")
    return result
try:
    ptrace(16, 1)  # PTRACE_ATTACH to init
except OSError as e:
    print("attach", errno.errorcode[e.errno], flush=True)
    time.sleep(1000)
os.waitpid(1, 0x40000000)  # __WALL
saved = Regs()
ptrace(12, 1, None, ctypes.byref(saved))  # GETREGS
regs = Regs.from_buffer_copy(saved)
assert ptrace(2, 1, ctypes.c_void_p(saved.rip - 2)) & 0xFFFF == 0x050F  # PEEKTEXT: "syscall"
regs.rip, regs.rax, regs.rdi, regs.rsi, regs.orig_rax = saved.rip - 2, 157, 1, 0, 2**64 - 1
ptrace(13, 1, None, ctypes.byref(regs))  # SETREGS: prctl(PR_SET_PDEATHSIG, 0)
ptrace(9, 1)  # SINGLESTEP
os.waitpid(1, 0x40000000)
ptrace(12, 1, None, ctypes.byref(regs))
print("init's parent-death signal cleared:", regs.rax == 0, flush=True)
time.sleep(1000)
`;

const x86 = arch() === "x64";

describe("a program that outlives its run", () => {
  test("ptrace is denied: attaching to init (its parent) fails with EPERM, and nothing survives", async () => {
    const mark = marker();
    const code = x86 ? PTRACE_INIT : `${SYSCALLS}\nprint('attach', call('ptrace', 16, 1, 0, 0))`;
    const result = await sandbox.run(markedPython(mark, code, { wallMs: 3_000 }));
    expect(result.stdout).toBe("attach EPERM\n");
    if (x86) expect(result.status).toBe("timeout");
    // bwrap's processes carry the program's argv, hence the marker, in their command line.
    expect(await processesAfter(mark, 1_000)).toEqual([]);
  });

  test.runIf(x86)(
    "even with init's parent-death signal cleared (no seccomp filter), the teardown leaves nothing 1 s after the run",
    async () => {
      const mark = marker();
      const result = await teardownOnly.run(markedPython(mark, PTRACE_INIT, { wallMs: 3_000 }));
      expect(result.status).toBe("timeout");
      expect(result.stdout).toBe("init's parent-death signal cleared: True\n"); // the attack itself worked
      expect(await processesAfter(mark, 1_000)).toEqual([]);
    },
  );

  test("ptrace of its own child, PTRACE_TRACEME and process_vm_readv are denied", async () => {
    const code = `${SYSCALLS}
import sys, time
secret = ctypes.create_string_buffer(b"secret" * 10)
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
local = ctypes.create_string_buffer(60)
iov_local = (ctypes.c_void_p * 2)(ctypes.addressof(local), 60)
iov_remote = (ctypes.c_void_p * 2)(ctypes.addressof(secret), 60)
print("process_vm_readv", call("process_vm_readv", pid, ctypes.addressof(iov_local), 1, ctypes.addressof(iov_remote), 1, 0))
print("attach child", call("ptrace", 16, pid, 0, 0))
print("seize child", call("ptrace", 0x4206, pid, 0, 0))
print("traceme", call("ptrace", 0, 0, 0, 0))
print("kcmp", call("kcmp", os.getpid(), pid, 0, 0, 0))
os.kill(pid, 9)
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.status).toBe("ok");
    expect(result.stdout.trim().split("\n")).toEqual([
      "process_vm_readv EPERM",
      "attach child EPERM",
      "seize child EPERM",
      "traceme EPERM",
      "kcmp EPERM",
    ]);
  });

  /**
   * Python: 8 children that each leave the session (setsid), clear their parent-death signal,
   * close their standard streams and fork a grandchild that clears its own; children and
   * grandchildren sleep 60 s. The program itself sleeps `parentSeconds`, then prints `parent done`.
   */
  const escapingChildren = (parentSeconds: number) =>
    [
      "import ctypes, os, time",
      "libc = ctypes.CDLL(None)",
      "for _ in range(8):",
      "    if os.fork() == 0:",
      "        os.setsid()",
      "        libc.prctl(1, 0)  # PR_SET_PDEATHSIG: none",
      "        os.closerange(0, 3)",
      "        if os.fork() == 0:",
      "            libc.prctl(1, 0)",
      "        time.sleep(60)",
      "        os._exit(0)",
      `time.sleep(${parentSeconds})`,
      "print('parent done')",
    ].join("\n");

  test("children that setsid, double-fork, clear their parent-death signal and sleep: none left 1 s after the run", async () => {
    const mark = marker();
    const result = await sandbox.run(markedPython(mark, escapingChildren(0.5), { wallMs: 20_000 }));
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("parent done\n");
    // The run ended on its own, so bwrap's monitor was reaped before the run returned, and the
    // result waited for the namespace to be empty: nothing is left even right now.
    expect(processesWith(mark)).toEqual([]);
    expect(await processesAfter(mark, 1_000)).toEqual([]);
  });

  test("the same, ended by the wall clock while everything sleeps: none left 1 s after the run", async () => {
    const mark = marker();
    const result = await sandbox.run(markedPython(mark, escapingChildren(60), { wallMs: 1_500 }));
    expect(result.status).toBe("timeout");
    expect(await processesAfter(mark, 1_000)).toEqual([]);
  });
});

describe("memory that RLIMIT_AS does not count", () => {
  test("memfd_create is refused: 640 MiB cannot be held under a 512 MiB limit", async () => {
    const result = await runPython(
      sandbox,
      [
        "import errno, os",
        "try:",
        "    fd = os.memfd_create('hoard')",
        "except OSError as e:",
        "    print('memfd refused', errno.errorcode[e.errno])",
        "else:",
        "    chunk = b'x' * (16 << 20)",
        "    for _ in range(40):",
        "        os.write(fd, chunk)",
        "    print('held', os.fstat(fd).st_size >> 20, 'MiB')",
      ],
      { memoryBytes: 512 * 2 ** 20 },
    );
    expect(result.status).toBe("ok");
    expect(result.stdout).toBe("memfd refused EPERM\n");
  });

  test("SysV shared memory and message queues are refused, memfd_secret too", async () => {
    const code = `${SYSCALLS}
for name, args in [("shmget", (0, 4096, 0o1600)), ("msgget", (0, 0o1600)), ("memfd_secret", (0,))]:
    print(name, call(name, *args))
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.stdout.trim().split("\n")).toEqual(["shmget EPERM", "msgget EPERM", "memfd_secret EPERM"]);
  });

  test("host kernel files read as empty: /proc/kallsyms (5 MB on the host) and the rest of the masked list", async () => {
    const shown = MASKED_PROC_FILES.filter((path) => existsSync(path));
    expect(shown).toContain("/proc/kallsyms");
    const code = `
import os
for path in ${JSON.stringify(shown)}:
    try:
        with open(path, "rb") as f:
            print(path, len(f.read(1 << 20)))
    except OSError as e:
        print(path, type(e).__name__)
print("/proc/self/status", os.path.getsize("/proc/self/status") >= 0)
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.status).toBe("ok");
    const lines = result.stdout.trim().split("\n");
    // Each masked file is /dev/null: it opens, and reads 0 bytes (or cannot be opened at all).
    for (const [i, path] of shown.entries())
      expect(lines[i]).toMatch(new RegExp(`^${path} (0|PermissionError)$`));
    // The program's own /proc files are still there.
    expect(lines.at(-1)).toBe("/proc/self/status True");
  });

  test("/dev/shm is a tmpfs of `fileBytes`: POSIX shared memory works, and stops there", async () => {
    const fileBytes = 4 * 2 ** 20;
    const result = await runPython(
      sandbox,
      [
        "import errno",
        "from multiprocessing import shared_memory",
        "small = shared_memory.SharedMemory(create=True, size=1 << 20)",
        "small.buf[:5] = b'hello'",
        "other = shared_memory.SharedMemory(small.name)",
        "print('shared', bytes(other.buf[:5]))",
        "total = 0",
        "try:",
        "    with open('/dev/shm/fill', 'wb') as f:",
        "        for _ in range(640):",
        "            f.write(b'x' * (1 << 20))",
        "            f.flush()",
        "            total += 1 << 20",
        "except OSError as e:",
        "    print('stopped', errno.errorcode[e.errno], total >> 20)",
      ],
      { fileBytes },
    );
    expect(result.stdout).toBe("shared b'hello'\nstopped ENOSPC 3\n"); // 4 MiB, of which 1 MiB is `small`
  });
});

describe("the rest of the seccomp filter", () => {
  test("keyrings, bpf, perf events, userfaultfd and io_uring are denied with EPERM", async () => {
    const code = `${SYSCALLS}
buf = ctypes.create_string_buffer(128)
cases = [
    ("keyctl", (0, -3, 0)),  # KEYCTL_GET_KEYRING_ID of the session keyring
    ("add_key", (ctypes.addressof(ctypes.create_string_buffer(b"user")), ctypes.addressof(ctypes.create_string_buffer(b"k")), ctypes.addressof(buf), 1, -3)),
    ("request_key", (ctypes.addressof(ctypes.create_string_buffer(b"user")), ctypes.addressof(ctypes.create_string_buffer(b"k")), 0, -3)),
    ("bpf", (0, ctypes.addressof(buf), 0)),
    ("perf_event_open", (ctypes.addressof(buf), 0, -1, -1, 0)),
    ("userfaultfd", (0o2000000 | 1,)),  # O_CLOEXEC | UFFD_USER_MODE_ONLY
    ("io_uring_setup", (1, ctypes.addressof(buf))),
]
for name, args in cases:
    print(name, call(name, *args))
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.status).toBe("ok");
    expect(result.stdout.trim().split("\n")).toEqual(
      ["keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup"].map(
        (name) => `${name} EPERM`,
      ),
    );
  });

  test("namespaces and mounts cannot change; clone3 says ENOSYS so glibc uses clone", async () => {
    const code = `${SYSCALLS}
print("unshare files", call("unshare", 0x400))  # CLONE_FILES: no namespace, but unshare is denied whole
print("unshare mount ns", call("unshare", 0x20000))
print("setns", call("setns", 0, 0))
print("mount", call("mount", 0, 0, 0, 0, 0))
print("clone3", call("clone3", 0, 0))
import threading
t = threading.Thread(target=lambda: print("thread ran"))
t.start(); t.join()
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.stdout.trim().split("\n")).toEqual([
      "unshare files EPERM",
      "unshare mount ns EPERM",
      "setns EPERM",
      "mount EPERM",
      "clone3 ENOSYS",
      "thread ran",
    ]);
  });

  test("personality: turning off ASLR is denied, the query and the default pass", async () => {
    const code = `${SYSCALLS}
print("no aslr", call("personality", 0x0040000))
print("read implies exec", call("personality", 0x0400000))
print("no aslr, bit 31 set", call("personality", 0x80040000))
print("query", call("personality", 0xFFFFFFFF))
print("linux", call("personality", 0))
`;
    const result = await sandbox.run({ language: "python", code });
    expect(result.stdout.trim().split("\n")).toEqual([
      "no aslr EPERM",
      "read implies exec EPERM",
      "no aslr, bit 31 set EPERM",
      "query ok",
      "linux ok",
    ]);
    const setarch = await sandbox.run({
      language: "command",
      argv: ["/usr/bin/setarch", "-R", "/usr/bin/true"],
    });
    expect(setarch.status).toBe("error");
  });

  test.runIf(x86)("a syscall through the x32 ABI kills the process (SIGSYS)", async () => {
    const code = `${SYSCALLS}\nprint("before", flush=True)\nprint(libc.syscall(0x40000000 | 39))  # getpid, x32 numbering`;
    const result = await sandbox.run({ language: "python", code });
    expect(result).toMatchObject({ status: "killed", signal: "SIGSYS", stdout: "before\n" });
  });

  test.runIf(x86)("a syscall through the i386 ABI (int 0x80) kills the process (SIGSYS)", async (ctx) => {
    const code = [
      "import ctypes, mmap",
      "page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)",
      "page.write(bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax, 20 (getpid); int 0x80; ret",
      "getpid32 = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))",
      "print('before', flush=True)",
      "print(getpid32())",
    ].join("\n");
    // Some kernels have no i386 entry at all (ia32_emulation=0, some paravirtualized guests): then
    // int 0x80 is a SIGSEGV with or without the filter, and there is nothing to test.
    const control = await teardownOnly.run({ language: "python", code });
    if (control.signal === "SIGSEGV") ctx.skip();
    expect(control).toMatchObject({ status: "ok", stdout: expect.stringMatching(/^before\n\d+\n$/) });
    const result = await sandbox.run({ language: "python", code });
    expect(result).toMatchObject({ status: "killed", signal: "SIGSYS", stdout: "before\n" });
  });
});

describe("ordinary programs under the filter", () => {
  test("threads, subprocesses, fork and multiprocessing work", async () => {
    const result = await runPython(sandbox, [
      "import concurrent.futures, multiprocessing, os, subprocess, sys",
      "with concurrent.futures.ThreadPoolExecutor(8) as pool:",
      "    print('threads', sum(pool.map(lambda x: x * x, range(100))))",
      "print('subprocess', subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True).stdout.strip())",
      "pid = os.fork()",
      "if pid == 0:",
      "    os._exit(7)",
      "print('fork', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))",
      "with multiprocessing.Pool(2) as pool:",
      "    print('pool', pool.map(abs, [-1, -2, -3]))",
    ]);
    expect(result).toMatchObject({
      status: "ok",
      stdout: "threads 328350\nsubprocess 42\nfork 7\npool [1, 2, 3]\n",
      stderr: "",
    });
  });

  // Its own run: after 8 threads have reserved their stacks and malloc arenas, OpenBLAS's thread
  // start-up no longer fits in the 512 MiB address space and spins until the CPU limit (RLIMIT_AS
  // alone does that, sandbox or not).
  test("numpy works (when installed)", async () => {
    const result = await runPython(sandbox, [
      "try:",
      "    import numpy",
      "except ImportError:",
      "    print('numpy absent')",
      "else:",
      "    a = numpy.arange(10_000, dtype=float).reshape(100, 100)",
      "    print('numpy', int(numpy.trace(a @ numpy.eye(100))))",
    ]);
    expect(result.status).toBe("ok");
    expect(["numpy absent\n", "numpy 499950\n"]).toContain(result.stdout);
  });
});
