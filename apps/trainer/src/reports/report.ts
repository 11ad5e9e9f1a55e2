/**
 * `trainer:report`: one static HTML page for one or more runs (also written at the end of `train`),
 * and the same charts as SVG files for READMEs.
 *
 *   nx run trainer:report -- --run <id>[,<id>…] [--recipe <name|path>] [--store <uri>] [--out <dir>]
 *
 * The page holds, from each run's stored metrics (so a resumed run reports its whole history):
 *   - curves over RL steps: team reward and training success (per run), held-out success with the
 *     evaluation's 95% Wilson band (per run), and per policy — named with the roles it speaks for —
 *     loss, KL to the reference, entropy, clip fraction, gradient norm; tokens/s per run;
 *   - for a compare or sweep id: its table (as `compare.md`/`sweep.md`) and its runs' curves;
 *   - example transcripts: the best, median and worst episode of each run's last committed step,
 *     every agent's turn with its prompt, completion and reward.
 * Several runs share each chart, one line per run (per run and policy for learner metrics).
 *
 * Charts are SVG drawn on the server (Vega-Lite through @troupe/charts); the page has no script
 * and loads nothing, so it works offline and can be attached to an issue. Written to the store:
 * runs/<id>/report/index.html and runs/<id>/report/<chart>.svg (several runs:
 * reports/<hash of the ids>/…), and with --out to a local folder as well.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { escapeHtml, htmlFigure, htmlPage, htmlTable, type LineSeries, lineChartSvg } from "@troupe/charts";
import { stableHash } from "@troupe/core";
import { type MetricsRow, type ObjectStore, RunStore } from "@troupe/storage";
import { z } from "zod";
import { recipeEnvironment } from "../envs.ts";
import { ArmResultSchema, compareRows, summarise } from "../experiments/compare-results.ts";
import { type EvalPoint, runCurve } from "../experiments/run-results.ts";
import { SweepFileSchema, sweepRows } from "../experiments/sweep-results.ts";
import { type Recipe, RecipeError } from "../recipe.ts";
import { parseRunConfig } from "../recipe-files.ts";
import { interval, pct } from "./reporter.ts";

/** One chart of the page: its file name (without .svg), what it shows, and the SVG. */
export interface ReportChart {
  readonly name: string;
  readonly caption: string;
  readonly svg: string;
}

export interface RunReport {
  readonly html: string;
  readonly charts: readonly ReportChart[];
  /** The runs on the page (compare and sweep ids expanded into their runs). */
  readonly runIds: readonly string[];
}

interface RunData {
  readonly runId: string;
  readonly recipe: Recipe;
  /** Policy id → the roles it speaks for. */
  readonly roles: ReadonlyMap<string, readonly string[]>;
  readonly learner: readonly MetricsRow[];
  readonly curve: readonly EvalPoint[];
  readonly lastStep: number | undefined;
}

interface Group {
  readonly kind: "compare" | "sweep";
  readonly id: string;
  readonly rows: Record<string, string | number>[];
  readonly runIds: readonly string[];
}

const decoder = new TextDecoder();

async function readJson(store: ObjectStore, key: string): Promise<unknown> {
  return JSON.parse(decoder.decode(await store.get(key)));
}

/** A compare or sweep id: its table rows and runs; undefined for a plain run id. */
async function readGroup(store: ObjectStore, id: string): Promise<Group | undefined> {
  if (await store.head(`runs/${id}/compare.json`)) {
    const doc = z
      .looseObject({ results: z.array(ArmResultSchema) })
      .parse(await readJson(store, `runs/${id}/compare.json`));
    return {
      kind: "compare",
      id,
      rows: compareRows(summarise(doc.results)),
      runIds: doc.results.map((r) => r.runId),
    };
  }
  if (await store.head(`runs/${id}/sweep.json`)) {
    const doc = SweepFileSchema.parse(await readJson(store, `runs/${id}/sweep.json`));
    return { kind: "sweep", id, rows: sweepRows(doc.rows), runIds: doc.results.map((r) => r.runId) };
  }
  return undefined;
}

async function readRun(store: ObjectStore, runId: string): Promise<RunData> {
  const runStore = new RunStore(store, runId);
  if (!(await store.head(`runs/${runId}/config.json`))) {
    throw new RecipeError(`report: no run "${runId}" in ${store.uri} (no runs/${runId}/config.json)`);
  }
  const recipe = await parseRunConfig(await runStore.readConfig(), `run ${runId} config`);
  const { team } = recipeEnvironment(recipe);
  const roles = new Map<string, string[]>();
  for (const role of team.roles) roles.set(role.policy, [...(roles.get(role.policy) ?? []), role.id]);
  const learner = (await runStore.readMetrics({ committedOnly: true })).filter((r) => r.source === "learner");
  return {
    runId,
    recipe,
    roles,
    learner,
    curve: await runCurve(store, runId),
    lastStep: await runStore.latestCommittedStep(),
  };
}

const num = (row: MetricsRow, key: string): number | undefined => {
  const v = row.metrics[key];
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
};

/** One point per committed step that has the metric (x: RL steps done, so step s → s + 1). */
function stepSeries(
  name: string,
  rows: readonly MetricsRow[],
  value: (row: MetricsRow) => number | undefined,
) {
  return {
    name,
    points: rows.flatMap((row) => {
      const y = value(row);
      return y === undefined ? [] : [{ x: row.step + 1, y }];
    }),
  };
}

/** Per-policy learner metrics: one series per (run, policy), named with the policy's roles. */
function policySeries(runs: readonly RunData[], metric: string): LineSeries[] {
  return runs.flatMap((run) =>
    [...run.roles.entries()].map(([policy, roles]) => {
      const who = roles.length === 1 && roles[0] === policy ? policy : `${policy} (${roles.join(", ")})`;
      return stepSeries(runs.length > 1 ? `${run.runId} · ${who}` : who, run.learner, (row) =>
        num(row, `${policy}/${metric}`),
      );
    }),
  );
}

const X_LABEL = "RL step";

async function buildCharts(runs: readonly RunData[]): Promise<ReportChart[]> {
  const line = async (
    name: string,
    caption: string,
    title: string,
    yLabel: string,
    series: LineSeries[],
    percent = false,
  ): Promise<ReportChart> => ({
    name,
    caption,
    svg: await lineChartSvg({
      title,
      xLabel: X_LABEL,
      xTickMinStep: 1,
      yLabel,
      ...(percent ? { yFormat: ".0%", yDomain: [0, 1] as const } : {}),
      series: series.filter((s) => s.points.length > 0),
    }),
  });
  const perRun = (value: (row: MetricsRow) => number | undefined) =>
    runs.map((run) => stepSeries(run.runId, run.learner, value));
  const heldOut: LineSeries[] = runs.map((run) => ({
    name: run.runId,
    points: run.curve.map((p) => ({ x: p.step, y: p.successRate, low: p.ci95[0], high: p.ci95[1] })),
  }));
  const tasks = [...new Set(runs.flatMap((r) => r.curve.map((p) => p.tasks)))].join("/");
  return Promise.all([
    line(
      "held-out-success",
      `held-out success (greedy on ${tasks || "the"} test tasks) with its 95% Wilson interval; step 0 is the warm start`,
      "Held-out success",
      "held-out success",
      heldOut,
      true,
    ),
    line(
      "team-reward",
      "mean reward of the step's samples",
      "Team reward",
      "mean reward",
      perRun((r) => num(r, "meanReward")),
    ),
    line(
      "success",
      "share of the step's training episodes that succeeded",
      "Training success",
      "episode success",
      perRun((r) => num(r, "episodeSuccess")),
      true,
    ),
    line(
      "loss",
      "the learner's loss, per policy (last PPO epoch)",
      "Loss",
      "loss",
      policySeries(runs, "loss"),
    ),
    line(
      "kl",
      "KL to the reference (k3; 0 without loss.klCoef), per policy",
      "KL to the reference",
      "KL",
      policySeries(runs, "kl"),
    ),
    line("entropy", "mean token entropy, per policy", "Entropy", "entropy", policySeries(runs, "entropy")),
    line(
      "clip-fraction",
      "share of tokens whose PPO ratio was clipped, per policy",
      "Clip fraction",
      "clip fraction",
      policySeries(runs, "clipFraction"),
    ),
    line(
      "grad-norm",
      "global gradient norm before clipping, per policy",
      "Gradient norm",
      "grad norm",
      policySeries(runs, "gradNorm"),
    ),
    line(
      "tokens-per-second",
      "completion tokens sampled per second of the step's own time (rollouts, learner, evaluation)",
      "Tokens per second",
      "tokens/s",
      perRun((r) => {
        const tokens = num(r, "tokens");
        const seconds = num(r, "seconds");
        return tokens !== undefined && seconds ? tokens / seconds : undefined;
      }),
    ),
  ]);
}

interface Transcript {
  readonly label: "best" | "median" | "worst";
  readonly taskId: string;
  readonly episode: number;
  readonly success: boolean | undefined;
  readonly return: number;
  readonly turns: { turn: number; agent: string; prompt: string; completion: string; reward: number }[];
}

/**
 * The best, median and worst episode of a committed step, by the return of its first turn. An
 * episode is a (task, episode) group of samples; where a strategy sampled several candidates for
 * one agent's turn (AT-GRPO), the transcript shows the one that scored best — the one AT-GRPO
 * continues the episode with.
 */
async function stepTranscripts(store: ObjectStore, runId: string, step: number): Promise<Transcript[]> {
  const data = await new RunStore(store, runId).readStep(step);
  const samples = [...data.shards.values()].flat();
  const episodes = new Map<string, typeof samples>();
  for (const s of samples) {
    const key = `${s.provenance.taskId}\u0000${s.provenance.episode}`;
    episodes.set(key, [...(episodes.get(key) ?? []), s]);
  }
  const transcripts = [...episodes.values()].map((group) => {
    const best = new Map<string, (typeof samples)[number]>();
    for (const s of group) {
      const key = `${String(s.provenance.turn).padStart(6, "0")}\u0000${s.provenance.agent}`;
      const seen = best.get(key);
      if (!seen || s.reward.total > seen.reward.total) best.set(key, s);
    }
    const path = [...best.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s);
    const first = path[0]!;
    return {
      taskId: first.provenance.taskId,
      episode: first.provenance.episode,
      success: first.success,
      return: first.return,
      turns: path.map((s) => ({
        turn: s.provenance.turn,
        agent: s.provenance.agent,
        prompt: s.observation.map((m) => m.content).join("\n\n"),
        completion: s.completionText,
        reward: s.reward.total,
      })),
    };
  });
  if (transcripts.length === 0) return [];
  transcripts.sort((a, b) => b.return - a.return || (a.taskId < b.taskId ? -1 : 1) || a.episode - b.episode);
  const picks: [Transcript["label"], number][] = [
    ["best", 0],
    ["median", Math.floor((transcripts.length - 1) / 2)],
    ["worst", transcripts.length - 1],
  ];
  return picks.map(([label, i]) => ({ label, ...transcripts[i]! }));
}

function transcriptHtml(t: Transcript): string {
  const outcome = t.success === undefined ? "" : t.success ? "solved, " : "not solved, ";
  const turns = t.turns
    .map(
      (turn) =>
        `<li class="turn" data-agent="${escapeHtml(turn.agent)}"><b>turn ${turn.turn}, ${escapeHtml(turn.agent)}</b> (reward ${turn.reward.toFixed(3)})` +
        `<details><summary>prompt</summary><pre>${escapeHtml(turn.prompt)}</pre></details>` +
        `<pre class="completion">${escapeHtml(turn.completion)}</pre></li>`,
    )
    .join("\n");
  return (
    `<details class="transcript" data-label="${t.label}"><summary>${t.label}: task ${escapeHtml(t.taskId)}, episode ${t.episode} — ` +
    `${outcome}return ${t.return.toFixed(3)}</summary><ol>${turns}</ol></details>`
  );
}

function recipeRows(runs: readonly RunData[]): Record<string, string | number>[] {
  return runs.map((run) => {
    const r = run.recipe;
    const start = run.curve.find((p) => p.step === 0);
    const end = run.curve.at(-1);
    const withInterval = (p: EvalPoint | undefined) =>
      p ? `${pct(p.successRate)} ${interval(p.ci95)}` : "-";
    return {
      run: run.runId,
      environment: r.environment.name,
      team: [...run.roles.entries()].map(([p, roles]) => `${roles.join("+")}→${p}`).join(", "),
      strategy: r.strategy.name,
      "steps done": run.lastStep === undefined ? 0 : run.lastStep + 1,
      "of steps": r.train.steps,
      seed: r.seed,
      "held-out start %": withInterval(start),
      "held-out last %": withInterval(end && end !== start ? end : undefined),
    };
  });
}

/** Builds the page and its charts for run, compare and sweep ids (read from the store). */
export async function buildRunReport(store: ObjectStore, ids: readonly string[]): Promise<RunReport> {
  if (ids.length === 0) throw new RecipeError("report: pass --run <id>[,<id>…]");
  const groups: Group[] = [];
  const runIds: string[] = [];
  for (const id of ids) {
    const group = await readGroup(store, id);
    if (group) groups.push(group);
    for (const runId of group ? group.runIds : [id]) if (!runIds.includes(runId)) runIds.push(runId);
  }
  const runs: RunData[] = [];
  for (const runId of runIds) runs.push(await readRun(store, runId));
  const charts = await buildCharts(runs);
  const sections: string[] = ["<h2>Runs</h2>", htmlTable(recipeRows(runs), "runs")];
  for (const group of groups) {
    sections.push(`<h2>${group.kind} ${escapeHtml(group.id)}</h2>`, htmlTable(group.rows, group.kind));
  }
  sections.push("<h2>Curves</h2>");
  for (const chart of charts) {
    sections.push(htmlFigure({ id: chart.name, svg: chart.svg, caption: chart.caption }));
  }
  sections.push("<h2>Example transcripts (last committed step)</h2>");
  for (const run of runs) {
    if (run.lastStep === undefined) continue;
    const transcripts = await stepTranscripts(store, run.runId, run.lastStep);
    sections.push(
      `<h3>${escapeHtml(run.runId)}, step ${run.lastStep}</h3>`,
      transcripts.length ? transcripts.map(transcriptHtml).join("\n") : "<p>(no samples)</p>",
    );
  }
  const title = runs.length === 1 ? `Run ${runs[0]!.runId}` : `Runs ${ids.join(", ")}`;
  const html = htmlPage({
    title,
    subtitle: `${runs.length} run(s) in ${store.uri}; curves from the stored metrics of committed steps`,
    body: sections.join("\n"),
  });
  return { html, charts, runIds };
}

/** Where a report goes in the store: next to a single run, else under reports/. */
export function reportFolder(ids: readonly string[]): string {
  return ids.length === 1 ? `runs/${ids[0]}/report/` : `reports/${stableHash([...ids]).slice(0, 16)}/`;
}

/** Builds the report and writes index.html and the charts' SVG files to the store (and `out`, if given). */
export async function writeRunReport(
  store: ObjectStore,
  ids: readonly string[],
  out?: string,
): Promise<{ folder: string; report: RunReport }> {
  const report = await buildRunReport(store, ids);
  const folder = reportFolder(ids);
  const encoder = new TextEncoder();
  const files: [string, string][] = [
    ["index.html", report.html],
    ...report.charts.map((c): [string, string] => [`${c.name}.svg`, c.svg]),
  ];
  for (const [name, text] of files) await store.put(`${folder}${name}`, encoder.encode(text));
  if (out) {
    mkdirSync(out, { recursive: true });
    for (const [name, text] of files) writeFileSync(join(out, name), text);
  }
  return { folder, report };
}
