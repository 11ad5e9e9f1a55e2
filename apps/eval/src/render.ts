/**
 * An eval report as Markdown (for a job summary, a README, the store) and as one static HTML page
 * (charts drawn on the server with @troupe/charts, no script) — with the gate's verdict when a
 * gate was run.
 */
import {
  escapeHtml,
  htmlFigure,
  htmlPage,
  htmlTable,
  type IntervalRow,
  intervalChartSvg,
  lineChartSvg,
} from "@troupe/charts";
import { markdownTable } from "@troupe/trainer";
import { type GateResult, gateRows } from "./gate.ts";
import type { Estimate, EvalEntry, EvalReport } from "./schema.ts";

const pct = (x: number) => (100 * x).toFixed(1);
const pctCi = (e: Estimate) => `${pct(e.value)} [${pct(e.low)}, ${pct(e.high)}]`;

/** One row per entry: the headline numbers. */
export function summaryRows(report: EvalReport): Record<string, string | number>[] {
  const ks = [...new Set(report.entries.flatMap((e) => Object.keys(e.metrics.passAtK)))].sort(
    (a, b) => Number(a) - Number(b),
  );
  const withTests = report.entries.some((e) => e.metrics.testPassRate);
  const tiers = [...new Set(report.entries.flatMap((e) => Object.keys(e.metrics.tiers ?? {})))];
  return report.entries.map((e) => ({
    subject: e.label,
    environment: e.environment.name,
    backend: e.backend,
    tasks: e.tasks,
    "success % (95% CI)": pctCi(e.metrics.success),
    "team return (95% CI)": `${e.metrics.meanTeamReturn.value.toFixed(3)} [${e.metrics.meanTeamReturn.low.toFixed(3)}, ${e.metrics.meanTeamReturn.high.toFixed(3)}]`,
    ...Object.fromEntries(
      ks.map((k) => [`pass@${k} %`, e.metrics.passAtK[k] ? pct(e.metrics.passAtK[k].value) : "-"]),
    ),
    ...(withTests ? { "tests passed %": e.metrics.testPassRate ? pctCi(e.metrics.testPassRate) : "-" } : {}),
    ...Object.fromEntries(
      tiers.map((t) => [t, e.metrics.tiers?.[t] ? e.metrics.tiers[t].value.toFixed(3) : "-"]),
    ),
    "latency p50/p95 ms": `${Math.round(e.latency.p50Ms)}/${Math.round(e.latency.p95Ms)}`,
  }));
}

/** One row per (entry, role): token usage and generation time. */
export function usageRows(report: EvalReport): Record<string, string | number>[] {
  return report.entries.flatMap((e) =>
    Object.entries(e.usage).map(([role, u]) => ({
      subject: e.label,
      role,
      calls: u.calls,
      "prompt tokens/episode": u.promptTokensPerEpisode.toFixed(1),
      "completion tokens/episode": u.completionTokensPerEpisode.toFixed(1),
      "ms/call": u.msPerCall.toFixed(1),
    })),
  );
}

/**
 * One row per task difficulty (the games: the length of an optimal plan), one column per entry
 * that measures it: how many of those tasks it solved. Empty when no entry has a breakdown.
 */
export function difficultyRows(report: EvalReport): Record<string, string | number>[] {
  const entries = report.entries.filter((e) => e.metrics.byDifficulty?.length);
  const levels = [...new Set(entries.flatMap((e) => e.metrics.byDifficulty!.map((d) => d.difficulty)))].sort(
    (a, b) => a - b,
  );
  return levels.map((difficulty) => ({
    difficulty,
    ...Object.fromEntries(
      entries.map((e) => {
        const row = e.metrics.byDifficulty!.find((d) => d.difficulty === difficulty);
        const k = row ? Math.round(row.success.value * row.success.n) : 0;
        return [`${e.label} solved`, row ? `${k}/${row.success.n} (${pct(row.success.value)}%)` : "-"];
      }),
    ),
  }));
}

/** Success by difficulty, a line per entry with its Wilson band. */
async function difficultyChart(report: EvalReport): Promise<string> {
  return lineChartSvg({
    title: "Success by task difficulty",
    subtitle: "one episode per task with the subject's own sampling; 95% Wilson bands",
    xLabel: "difficulty (the games: moves of an optimal plan)",
    yLabel: "success",
    yDomain: [0, 1],
    yFormat: ".0%",
    xTickMinStep: 1,
    series: report.entries
      .filter((e) => e.metrics.byDifficulty?.length)
      .map((e) => ({
        name: e.label,
        points: e.metrics.byDifficulty!.map((d) => ({
          x: d.difficulty,
          y: d.success.value,
          low: d.success.low,
          high: d.success.high,
        })),
      })),
  });
}

function suiteLine(report: EvalReport): string {
  const s = report.suite;
  return (
    `suite ${s.name}: ${s.tasks} held-out tasks per subject; success = one episode per task with the subject's own ` +
    `sampling (95% Wilson interval); pass@k from ${s.samples} episodes per task at temperature ${s.temperature} ` +
    `(mean over tasks, 95% t-interval over tasks); store ${report.store}; ${report.createdAt}`
  );
}

export function gateMarkdown(result: GateResult, baselineName: string): string {
  const verdict = result.passed
    ? `**gate: passed** against ${baselineName} (every difference within noise)`
    : `**gate: FAILED** against ${baselineName}: ${result.failures.length} metric(s) dropped beyond their intervals`;
  const lines = [verdict, ""];
  if (!result.passed) lines.push("What dropped:", "", markdownTable(gateRows(result.failures)), "");
  lines.push(
    "<details><summary>every metric</summary>",
    "",
    markdownTable(gateRows(result.rows)),
    "",
    "</details>",
  );
  for (const note of result.notes) lines.push("", `note: ${note}`);
  return `${lines.join("\n")}\n`;
}

export function reportMarkdown(report: EvalReport, gate?: { result: GateResult; baseline: string }): string {
  const parts = [
    `## Troupe eval — ${report.suite.name}`,
    "",
    suiteLine(report),
    "",
    report.entries.length ? markdownTable(summaryRows(report)) : "(no subjects evaluated)",
    "",
  ];
  if (gate) parts.push(gateMarkdown(gate.result, gate.baseline));
  const byDifficulty = difficultyRows(report);
  if (byDifficulty.length) parts.push("### Success by difficulty", "", markdownTable(byDifficulty), "");
  if (report.entries.length) parts.push("### Usage per role", "", markdownTable(usageRows(report)), "");
  return `${parts.join("\n")}\n`;
}

/** Per entry: success and every pass@k, each with its interval. */
async function metricsChart(entry: EvalEntry): Promise<string> {
  const rows: IntervalRow[] = [
    {
      category: "success",
      value: entry.metrics.success.value,
      low: entry.metrics.success.low,
      high: entry.metrics.success.high,
    },
    ...Object.entries(entry.metrics.passAtK)
      .sort(([a], [b]) => Number(a) - Number(b))
      .map(([k, e]) => ({ category: `pass@${k}`, value: e.value, low: e.low, high: e.high })),
    ...(entry.metrics.testPassRate
      ? [
          {
            category: "tests passed",
            value: entry.metrics.testPassRate.value,
            low: entry.metrics.testPassRate.low,
            high: entry.metrics.testPassRate.high,
          },
        ]
      : []),
  ];
  return intervalChartSvg({
    title: `${entry.label} — ${entry.environment.name}`,
    subtitle: `${entry.tasks} held-out tasks, ${entry.samples} samples each; 95% intervals`,
    valueLabel: "rate",
    valueFormat: ".0%",
    valueDomain: [0, 1],
    rows,
  });
}

function examplesHtml(entry: EvalEntry): string {
  return entry.examples
    .map((ex) => {
      const turns = ex.turns
        .map(
          (t) =>
            `<li class="turn" data-agent="${escapeHtml(t.agent)}"><b>turn ${t.turn}, ${escapeHtml(t.agent)}</b> (${escapeHtml(t.role)}, team reward ${t.teamReward.toFixed(3)})` +
            `<details><summary>prompt</summary><pre>${escapeHtml(t.prompt)}</pre></details><pre class="completion">${escapeHtml(t.completion)}</pre></li>`,
        )
        .join("\n");
      return (
        `<details class="example" data-label="${ex.label}"><summary>${ex.label}: task ${escapeHtml(ex.taskId)} — ` +
        `${ex.solved === null ? "not judged" : ex.solved ? "solved" : "not solved"}, team return ${ex.teamReturn.toFixed(3)}</summary><ol>${turns}</ol></details>`
      );
    })
    .join("\n");
}

export async function reportHtml(
  report: EvalReport,
  gate?: { result: GateResult; baseline: string },
): Promise<string> {
  const sections: string[] = [`<p>${escapeHtml(suiteLine(report))}</p>`];
  if (gate) {
    const cls = gate.result.passed ? "verdict-pass" : "verdict-fail";
    const text = gate.result.passed
      ? `gate passed against ${gate.baseline}: every difference within noise`
      : `gate FAILED against ${gate.baseline}: ${gate.result.failures.length} metric(s) dropped beyond their intervals`;
    sections.push(`<h2>Regression gate</h2><p class="${cls}" id="gate-verdict">${escapeHtml(text)}</p>`);
    if (!gate.result.passed) sections.push(htmlTable(gateRows(gate.result.failures), "gate-failures"));
    sections.push(
      `<details><summary>every metric</summary>${htmlTable(gateRows(gate.result.rows), "gate")}</details>`,
    );
    for (const note of gate.result.notes) sections.push(`<p>note: ${escapeHtml(note)}</p>`);
  }
  sections.push("<h2>Results</h2>", htmlTable(summaryRows(report), "summary"));
  const byDifficulty = difficultyRows(report);
  if (byDifficulty.length) {
    sections.push(
      "<h2>Success by difficulty</h2>",
      htmlFigure({
        id: "by-difficulty",
        svg: await difficultyChart(report),
        caption: "held-out success at each task difficulty (95% Wilson bands)",
      }),
      htmlTable(byDifficulty, "by-difficulty"),
    );
  }
  sections.push("<h2>Usage per role</h2>", htmlTable(usageRows(report), "usage"));
  for (const [i, entry] of report.entries.entries()) {
    sections.push(`<h2>${escapeHtml(entry.label)}</h2>`);
    sections.push(
      htmlFigure({
        id: `metrics-${i}`,
        svg: await metricsChart(entry),
        caption: "success (Wilson), pass@k and tests passed (t-interval over tasks)",
      }),
    );
    sections.push("<h3>Example episodes (own sampling)</h3>", examplesHtml(entry));
  }
  return htmlPage({
    title: `Troupe eval — ${report.suite.name}`,
    subtitle: `${report.entries.length} subject(s), ${report.createdAt}`,
    body: sections.join("\n"),
  });
}
