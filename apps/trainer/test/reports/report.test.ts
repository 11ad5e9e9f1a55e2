/**
 * The run report in a real headless Chromium (Debian's `chromium`, driven by playwright-core): a
 * tiny run trained through the CLI writes its page at the end of `train`; `trainer:report` puts two
 * runs on one page. The page renders with no console error and loads nothing, every chart has one
 * point per evaluation or committed step per run, and each run shows its best, median and worst
 * transcript.
 *
 * Chromium is a system package (tools/system-deps.sh installs it; CI has it). Without it this suite
 * fails, naming what to install: a skipped browser test would hide a broken page.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { FileStore } from "@troupe/storage/node";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRecipe } from "../../src/experiments/run-recipe.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { TINY_PLAN_PATH, trainerInProcess } from "../tiny.ts";

const CHROMIUM = process.env.TROUPE_CHROMIUM ?? "/usr/bin/chromium";
const root = mkdtempSync(join(tmpdir(), "troupe-report-"));
const storeDir = join(root, "store");
const storeUri = pathToFileURL(storeDir).href;
const recipeText = `
name: report-e2e
seed: 2
store: ${storeUri}
${TINY_PLAN_PATH}
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
train: { steps: 2, tasksPerStep: 2, evalEvery: 1, evalTasks: 3, evalTemperature: 0, checkpointEvery: 1 }
`;
let browser: Browser;
let trainOut = "";

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the report browser test needs Chromium at ${CHROMIUM}: install Debian's "chromium" package ` +
        "(apt-get install chromium; `npm test` runs tools/system-deps.sh, which does) or set TROUPE_CHROMIUM",
    );
  }
  const recipePath = join(root, "report-e2e.yaml");
  writeFileSync(recipePath, recipeText);
  const train = await trainerInProcess(["train", "--recipe", recipePath, "--run", "rep-a"]);
  expect(train.code).toBe(0);
  trainOut = train.stdout;
  await runRecipe({
    recipe: loadRecipeText(recipeText.replace("seed: 2", "seed: 3")),
    runId: "rep-b",
    store: new FileStore(storeDir),
    reporter: { step() {}, eval() {}, note() {} },
  });
  // Root in a container: Chromium's own sandbox needs user namespaces it may not get.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  rmSync(root, { recursive: true, force: true });
});

/** Opens a page file; collects console errors, page errors and any request that is not the file itself. */
async function open(path: string): Promise<{ page: Page; errors: string[]; requests: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  const requests: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(pathToFileURL(path).href);
  return { page, errors, requests };
}

const count = (page: Page, selector: string) => page.locator(selector).count();

/** How many elements of the page each selector finds must be the number it is given. */
async function expectCounts(page: Page, expected: Record<string, number>): Promise<void> {
  const found: Record<string, number> = {};
  for (const selector of Object.keys(expected)) found[selector] = await count(page, selector);
  expect(found).toEqual(expected);
}

describe("the run report in Chromium", { timeout: 90_000 }, () => {
  it("is written at the end of train, one point per evaluation and per committed step", async () => {
    const index = join(storeDir, "runs", "rep-a", "report", "index.html");
    // a local store prints a path a shell can open
    expect(trainOut).toContain(`report: ${storeDir}/runs/rep-a/report/index.html\n`);
    const { page, errors, requests } = await open(index);
    expect(await page.title()).toBe("Run rep-a");
    await expectCounts(page, {
      // held-out success at step 0 (the start), 1 and 2, with a band
      "#held-out-success g.point_marks path": 3,
      "#held-out-success g.line_marks path": 1,
      "#held-out-success g.band_marks path": 1,
      // per committed step (2)
      "#team-reward g.point_marks path": 2,
      "#tokens-per-second g.point_marks path": 2,
      "details.transcript": 3,
    });
    expect(
      await page.locator("details.transcript").evaluateAll((d) => d.map((x) => x.getAttribute("data-label"))),
    ).toEqual(["best", "median", "worst"]);
    expect(await count(page, "details.transcript li.turn")).toBeGreaterThanOrEqual(3);
    expect(errors).toEqual([]);
    expect(requests).toEqual([pathToFileURL(index).href]);
    await page.close();
  });

  it("puts several runs on one chart (trainer:report --run a,b) and writes the charts as SVG files", async () => {
    const out = join(root, "out");
    const { code, stdout } = await trainerInProcess([
      "report",
      "--run",
      "rep-a,rep-b",
      "--store",
      storeUri,
      "--out",
      out,
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^report of 2 run\(s\): .*\/reports\/[0-9a-f]{16}\/index\.html \(9 charts as \.svg beside it\)/,
    );
    const { page, errors } = await open(join(out, "index.html"));
    expect(await page.title()).toBe("Runs rep-a, rep-b");
    await expectCounts(page, {
      "table.runs tbody tr": 2,
      "#held-out-success g.point_marks path": 6,
      "#held-out-success g.line_marks path": 2,
      "#team-reward g.point_marks path": 4,
      "#success g.point_marks path": 4,
      "figure.chart svg": 9,
      "details.transcript": 6,
    });
    // The legend names both runs.
    const legend = await page.locator("#held-out-success svg").textContent();
    expect(legend).toContain("rep-a");
    expect(legend).toContain("rep-b");
    expect(errors).toEqual([]);
    for (const name of [
      "held-out-success",
      "team-reward",
      "loss",
      "kl",
      "entropy",
      "clip-fraction",
      "grad-norm",
    ]) {
      expect(readFileSync(join(out, `${name}.svg`), "utf8")).toMatch(/^<svg /);
    }
    await page.close();
  });

  it("expands a compare's id into its runs and shows its table", async () => {
    const arm = (name: string, runId: string, seed: number) => ({
      arm: name,
      seed,
      runId,
      successRate: 0.5,
      successes: 1,
      tasks: 2,
      startSuccessRate: 0,
      meanTeamReturn: -0.5,
      samples: 8,
      steps: 2,
      seconds: 1,
    });
    const results = [arm("warm-start", "rep-a", 2), arm("atgrpo-shared", "rep-b", 3)];
    mkdirSync(join(storeDir, "runs", "cmp-1"), { recursive: true });
    writeFileSync(
      join(storeDir, "runs", "cmp-1", "compare.json"),
      JSON.stringify({ base: {}, rows: [], results }),
    );
    const { code, stdout } = await trainerInProcess(["report", "--run", "cmp-1", "--store", storeUri]);
    expect(code).toBe(0);
    expect(stdout).toContain("report of 2 run(s): ");
    const html = readFileSync(join(storeDir, "runs", "cmp-1", "report", "index.html"), "utf8");
    expect(html).toContain("<h2>compare cmp-1</h2>");
    expect(html.match(/<table class="compare">[\s\S]*?<\/table>/)?.[0].match(/<tr>/g)).toHaveLength(3);
    expect(html).toContain("<td>warm-start</td>");
  });

  it("says which run is missing in one line", async () => {
    const { code, stderr } = await trainerInProcess(["report", "--run", "nope", "--store", storeUri]);
    expect(code).toBe(2);
    expect(stderr).toBe(`error: report: no run "nope" in ${storeUri} (no runs/nope/config.json)\n`);
  });
});
