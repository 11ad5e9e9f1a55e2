/**
 * `nx run trainer:bench-memory` — one RL step of every shipped recipe at its own settings (only
 * train.steps, train.evalTasks and sft.steps cut), each in a process group of its own, with the
 * peak resident memory of the whole group (peak-rss.ts) and the times. Prints a Markdown table and
 * one JSON line per recipe; exits 1 when a recipe crosses its memoryBudget.
 *
 *   npx nx run trainer:bench-memory [-- --recipes magrpo-humaneval,default --set key=value]
 *
 * Recipes of the torch engine (qwen-gpu) are left out: they need a GPU and model files.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { formatBytes } from "@troupe/core";
import { parse as parseYaml } from "yaml";
import { DEFAULT_MEMORY_BUDGET, loadRecipeText } from "../src/recipe.ts";
import { oneStepOverrides, runMeasuringPeakRss } from "./peak-rss.ts";

const appRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));
const recipesDir = join(appRoot, "recipes");

const { values } = parseArgs({
  options: {
    recipes: { type: "string" },
    set: { type: "string", multiple: true, default: [] },
  },
});

function shippedRecipes(): string[] {
  return readdirSync(recipesDir)
    .filter((f) => f.endsWith(".yaml"))
    .map((f) => f.slice(0, -".yaml".length))
    .filter((name) => {
      const raw = parseYaml(readFileSync(join(recipesDir, `${name}.yaml`), "utf8")) as {
        engine?: { kind?: string };
      };
      return (raw.engine?.kind ?? "onnx") === "onnx";
    })
    .sort();
}

interface Row {
  recipe: string;
  peakBytes: number;
  budgetBytes: number;
  seconds: number;
  stepSeconds: number | undefined;
  exitCode: number | null;
}

const names = values.recipes ? values.recipes.split(",") : shippedRecipes();
const rows: Row[] = [];
for (const name of names) {
  const text = readFileSync(join(recipesDir, `${name}.yaml`), "utf8");
  const store = mkdtempSync(join(tmpdir(), "troupe-bench-memory-"));
  const overrides = [...oneStepOverrides(text), ...(values.set ?? []), `store=file://${store}`];
  const recipe = loadRecipeText(text, overrides);
  const args = ["--conditions=@troupe/source", "--import", "tsx", "src/main.ts", "train", "--recipe", name];
  for (const o of overrides) args.push("--set", o);
  const run = await runMeasuringPeakRss(process.execPath, args, { cwd: appRoot });
  let stepSeconds: number | undefined;
  try {
    const runs = readdirSync(join(store, "runs")).filter((r) => r.startsWith(recipe.name));
    const lines = readFileSync(join(store, "runs", runs[0]!, "metrics.jsonl"), "utf8")
      .trim()
      .split("\n");
    const step0 = lines
      .map((l) => JSON.parse(l) as { step: number; source: string; metrics: Record<string, unknown> })
      .find((m) => m.step === 0 && m.source === "learner");
    stepSeconds = typeof step0?.metrics.seconds === "number" ? step0.metrics.seconds : undefined;
  } catch {
    stepSeconds = undefined;
  }
  rmSync(store, { recursive: true, force: true });
  const row: Row = {
    recipe: name,
    peakBytes: run.peakBytes,
    budgetBytes: recipe.memoryBudget ?? DEFAULT_MEMORY_BUDGET,
    seconds: run.seconds,
    stepSeconds,
    exitCode: run.exitCode,
  };
  rows.push(row);
  console.log(JSON.stringify(row));
  if (run.exitCode !== 0) process.stderr.write(`${name}: exit ${run.exitCode}\n${run.stderr.slice(-2000)}\n`);
}

console.log(
  "\n| recipe | peak RSS (process group) | memoryBudget | run (s) | RL step incl. eval (s) | exit |",
);
console.log("|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(
    `| ${r.recipe} | ${formatBytes(r.peakBytes)} | ${formatBytes(r.budgetBytes)} | ${r.seconds.toFixed(0)} | ${r.stepSeconds?.toFixed(1) ?? "—"} | ${r.exitCode} |`,
  );
}
const over = rows.filter((r) => r.peakBytes > r.budgetBytes || r.exitCode !== 0);
if (over.length > 0) {
  process.stderr.write(`over budget or failed: ${over.map((r) => r.recipe).join(", ")}\n`);
  process.exitCode = 1;
}
