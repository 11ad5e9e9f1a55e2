/**
 * The regression gate: a current report against a baseline report, entry by entry (matched on
 * `key`: the team's name or run id and its environment) and metric by metric (success, mean team
 * return, every pass@k both have, the test pass rate).
 *
 * Every metric is higher-is-better and comes with a 95% interval. A metric has **regressed** when
 * it fell by more than the two intervals allow together:
 *
 *   baseline − current  >  √(b² + c²) + tolerance
 *
 * with b the baseline's half-width below its value and c the current's half-width above its value
 * (the sides that face each other), i.e. the drop lies outside the approximate 95% interval of the
 * difference of two independent estimates. Smaller differences are noise and pass. It has
 * **improved** by the mirror rule. A baseline entry missing from the current report fails the gate
 * (a team that stopped being evaluated cannot be vouched for); an entry without a baseline is new
 * and passes.
 */
import type { Estimate, EvalEntry, EvalReport } from "./schema.ts";

export type Verdict = "regressed" | "within noise" | "improved" | "missing" | "new";

export interface GateRow {
  readonly key: string;
  readonly label: string;
  readonly metric: string;
  readonly baseline?: Estimate;
  readonly current?: Estimate;
  /** current − baseline. */
  readonly delta?: number;
  /** The largest drop that still counts as noise. */
  readonly allowed?: number;
  readonly verdict: Verdict;
}

export interface GateResult {
  readonly passed: boolean;
  readonly rows: readonly GateRow[];
  /** The rows that fail the gate: regressions and missing entries. */
  readonly failures: readonly GateRow[];
  readonly notes: readonly string[];
}

export interface GateOptions {
  /** Extra drop allowed on every metric, in the metric's own units (0.05 = 5 points of a rate). */
  readonly tolerance?: number;
}

function metricsOf(entry: EvalEntry): Map<string, Estimate> {
  const out = new Map<string, Estimate>([
    ["success", entry.metrics.success],
    ["mean team return", entry.metrics.meanTeamReturn],
  ]);
  for (const k of Object.keys(entry.metrics.passAtK).sort((a, b) => Number(a) - Number(b))) {
    out.set(`pass@${k}`, entry.metrics.passAtK[k]!);
  }
  if (entry.metrics.testPassRate) out.set("test pass rate", entry.metrics.testPassRate);
  return out;
}

export function compareEstimates(
  baseline: Estimate,
  current: Estimate,
  tolerance = 0,
): { delta: number; allowed: number; verdict: Verdict } {
  const delta = current.value - baseline.value;
  const allowed = Math.hypot(baseline.value - baseline.low, current.high - current.value) + tolerance;
  const allowedUp = Math.hypot(baseline.high - baseline.value, current.value - current.low) + tolerance;
  const verdict = -delta > allowed ? "regressed" : delta > allowedUp ? "improved" : "within noise";
  return { delta, allowed, verdict };
}

export function gateReports(
  current: EvalReport,
  baseline: EvalReport,
  options: GateOptions = {},
): GateResult {
  const tolerance = options.tolerance ?? 0;
  const rows: GateRow[] = [];
  const notes: string[] = [];
  if (current.suite.name !== baseline.suite.name || current.suite.tasks !== baseline.suite.tasks) {
    notes.push(
      `suites differ: current ${current.suite.name} (${current.suite.tasks} tasks), baseline ${baseline.suite.name} (${baseline.suite.tasks} tasks)`,
    );
  }
  const currentByKey = new Map(current.entries.map((e) => [e.key, e]));
  const baselineByKey = new Map(baseline.entries.map((e) => [e.key, e]));
  for (const base of baseline.entries) {
    const now = currentByKey.get(base.key);
    if (!now) {
      rows.push({ key: base.key, label: base.label, metric: "(entry)", verdict: "missing" });
      continue;
    }
    const ours = metricsOf(now);
    for (const [metric, b] of metricsOf(base)) {
      const c = ours.get(metric);
      if (!c) {
        notes.push(`${now.label}: ${metric} is not in the current report (suite changed?)`);
        continue;
      }
      rows.push({
        key: now.key,
        label: `${now.label} (baseline ${base.label})`,
        metric,
        baseline: b,
        current: c,
        ...compareEstimates(b, c, tolerance),
      });
    }
  }
  for (const now of current.entries) {
    if (!baselineByKey.has(now.key))
      rows.push({ key: now.key, label: now.label, metric: "(entry)", verdict: "new" });
  }
  const failures = rows.filter((r) => r.verdict === "regressed" || r.verdict === "missing");
  return { passed: failures.length === 0, rows, failures, notes };
}

const num = (x: number) => (Math.abs(x) >= 100 ? x.toFixed(0) : x.toFixed(3));
const est = (e: Estimate | undefined) => (e ? `${num(e.value)} [${num(e.low)}, ${num(e.high)}]` : "-");

/** Gate rows as table rows (for `table` and `markdownTable`). */
export function gateRows(rows: readonly GateRow[]): Record<string, string>[] {
  return rows.map((r) => ({
    entry: r.label,
    metric: r.metric,
    baseline: est(r.baseline),
    current: est(r.current),
    change: r.delta === undefined ? "-" : `${r.delta >= 0 ? "+" : ""}${num(r.delta)}`,
    "noise allows": r.allowed === undefined ? "-" : `−${num(r.allowed)}`,
    verdict: r.verdict,
  }));
}
