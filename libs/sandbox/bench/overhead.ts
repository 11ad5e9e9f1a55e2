/**
 * Start-up overhead of one sandboxed run: a python `pass` through the sandbox, against the same
 * interpreter spawned directly, the sandbox without its seccomp filter and PID-namespace teardown
 * (what they cost), the sandbox without its run cgroup (the budget divided between processes:
 * what the cgroup costs), and the unsafe fallback. Sequential runs (no queueing), medians. Then
 * throughput with the default pool (one run per CPU at once).
 *
 *   npx nx run sandbox:bench      (RUNS=200 for more samples)
 */
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { createSandbox, type Sandbox } from "../src/index.ts";

const RUNS = Number(process.env.RUNS ?? 50);

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) * q)]!;
}

function direct(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/usr/bin/python3", ["-B", "-u", "-c", "pass"], { stdio: "ignore" });
    child.on("error", reject);
    child.on("close", () => resolve());
  });
}

const sandboxed = async (sandbox: Sandbox) => {
  const result = await sandbox.run({ language: "python", code: "pass" });
  if (result.status !== "ok") throw new Error(`bench run failed: ${result.status} ${result.stderr}`);
};

const bubblewrap = await createSandbox();
const unhardened = await createSandbox({}, { seccomp: false, teardown: false });
const withoutCgroup = await createSandbox({ cgroup: false });
const unsafe = await createSandbox({ bwrap: "/nonexistent", unsafe: true });
const HARDENED = "python in the bubblewrap sandbox";
const UNHARDENED = "  the same without filter + teardown";
const NO_CGROUP = "  the same without a run cgroup";
const variants: Record<string, () => Promise<unknown>> = {
  "python3 -c pass, spawned directly": direct,
  [HARDENED]: () => sandboxed(bubblewrap),
  [UNHARDENED]: () => sandboxed(unhardened),
  [NO_CGROUP]: () => sandboxed(withoutCgroup),
  "python in the unsafe-rlimits fallback": () => sandboxed(unsafe),
  "bare command (/usr/bin/true) in bubblewrap": () =>
    bubblewrap.run({ language: "command", argv: ["/usr/bin/true"] }),
};
console.log(`memory bound of a run: ${bubblewrap.memoryBound}`);
console.log(
  `load average before: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
// Interleaved, so that load from other processes on the machine hits every variant alike.
const times: Record<string, number[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let i = -1; i < RUNS; i++) {
  for (const [name, run] of Object.entries(variants)) {
    const start = performance.now();
    await run();
    if (i >= 0) times[name]!.push(performance.now() - start); // i = -1 warms the page cache
  }
}
console.log(`${"".padEnd(46)} median    p10  (ms, ${RUNS} runs each)`);
for (const [name, ms] of Object.entries(times))
  console.log(
    `${name.padEnd(46)} ${quantile(ms, 0.5).toFixed(1).padStart(6)} ${quantile(ms, 0.1).toFixed(1).padStart(6)}`,
  );
const overhead = (q: number) =>
  quantile(times["python in the bubblewrap sandbox"]!, q) -
  quantile(times["python3 -c pass, spawned directly"]!, q);
console.log(
  `sandbox overhead per run: ${overhead(0.5).toFixed(1)} ms (median), ${overhead(0.1).toFixed(1)} ms (p10)`,
);
const hardening = (q: number) => quantile(times[HARDENED]!, q) - quantile(times[UNHARDENED]!, q);
const ratio = (q: number) => quantile(times[HARDENED]!, q) / quantile(times[UNHARDENED]!, q);
console.log(
  `seccomp filter + teardown per run: ${hardening(0.5).toFixed(1)} ms (median), ${hardening(0.1).toFixed(1)} ms (p10); ` +
    `ratio with/without ${ratio(0.5).toFixed(3)} (median), ${ratio(0.1).toFixed(3)} (p10)`,
);
const cgroupRatio = (q: number) => quantile(times[HARDENED]!, q) / quantile(times[NO_CGROUP]!, q);
console.log(
  `run cgroup: ratio with/without ${cgroupRatio(0.5).toFixed(3)} (median), ${cgroupRatio(0.1).toFixed(3)} (p10); ` +
    `sandbox / direct spawn ${(quantile(times[HARDENED]!, 0.5) / quantile(times["python3 -c pass, spawned directly"]!, 0.5)).toFixed(2)} (median)`,
);

const parallel = RUNS * 2;
const start = performance.now();
await Promise.all(Array.from({ length: parallel }, () => sandboxed(bubblewrap)));
const seconds = (performance.now() - start) / 1000;
console.log(`throughput, pool of ${availableParallelism()}: ${(parallel / seconds).toFixed(0)} runs/s`);
console.log(
  `load average after: ${loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);
