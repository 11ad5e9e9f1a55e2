/**
 * The largest shipped recipe — magrpo-humaneval: coding prompts of up to ~2,600 tokens, two turns,
 * MAGRPO's G = 4 tree — runs one RL step at its own model, sampling and batch settings (only the
 * step counts and the evaluation cut) under its memoryBudget, measured as the resident memory of
 * the whole process group (not the V8 heap). Crossing the budget kills the group and fails the
 * test. Before micro-batches and a budget this step grew one process past 23 GiB.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { formatBytes } from "@troupe/core";
import { afterAll, expect, it } from "vitest";
import { oneStepOverrides, runMeasuringPeakRss } from "../bench/peak-rss.ts";
import { DEFAULT_MEMORY_BUDGET, loadRecipeText } from "../src/recipe.ts";
import { appRoot } from "./tiny.ts";

const store = mkdtempSync(join(tmpdir(), "troupe-memory-budget-"));
afterAll(() => rmSync(store, { recursive: true, force: true }));

it("one step of magrpo-humaneval stays under its memoryBudget (process-group RSS)", async () => {
  const name = "magrpo-humaneval";
  const text = readFileSync(join(appRoot, "recipes", `${name}.yaml`), "utf8");
  const overrides = [...oneStepOverrides(text), `store=file://${store}`];
  const budget = loadRecipeText(text, overrides).memoryBudget ?? DEFAULT_MEMORY_BUDGET;
  const args = ["--conditions=@troupe/source", "--import", "tsx", "src/main.ts", "train", "--recipe", name];
  for (const o of overrides) args.push("--set", o);
  const run = await runMeasuringPeakRss(process.execPath, args, {
    cwd: appRoot,
    killAboveBytes: budget,
    intervalMs: 100,
  });
  const summary = `peak ${formatBytes(run.peakBytes)} of ${formatBytes(budget)}; exit ${run.exitCode}\n${run.stderr.slice(-1500)}`;
  expect(run.killed, summary).toBe(false);
  expect(run.exitCode, summary).toBe(0);
  expect(run.peakBytes, summary).toBeLessThanOrEqual(budget);
  expect(run.stdout).toMatch(/finished at step 0/);
}, 600_000);
