/**
 * The playground page in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
 * against the Node API (createApp + @hono/node-server on 127.0.0.1) serving a real tiny ONNX team
 * for Plan-Path: key → team list → random task → run → the streamed turns and the rendered grid.
 *
 * What the page shows is checked against the API's own answer to the same request (same task seed
 * and sampling seed, so the same episode), fetched separately without streaming.
 *
 * Chromium is a system package (tools/system-deps.sh installs it; CI has it). Without it this suite
 * fails, naming what to install: a skipped browser test would hide a broken page.
 */
import { existsSync } from "node:fs";
import { createTeamRegistry } from "@troupe/teams";
import { createOnnxBackend, type OnnxBackend } from "@troupe/teams/onnx";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/app.ts";
import { keyAuth, sha256Hex } from "../../src/auth.ts";
import { playgroundRoutes } from "../../src/playground/routes.ts";
import { type Listening, listen, tempStore, tinyTeam } from "../fixtures.ts";

const CHROMIUM = process.env.TROUPE_CHROMIUM ?? "/usr/bin/chromium";
const API_KEY = "playground-browser-key";
const TEAM = "tiny-path";
const SAMPLING_SEED = 7;

const tmp = tempStore();
let backend: OnnxBackend;
let server: Listening;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the playground browser test needs Chromium at ${CHROMIUM}: install Debian's "chromium" package ` +
        "(apt-get install chromium; `npm test` runs tools/system-deps.sh, which does) or set TROUPE_CHROMIUM",
    );
  }
  const registry = createTeamRegistry(tmp.store);
  await registry.publish(await tinyTeam(TEAM));
  await registry.setAlias(TEAM, "stable", 1);
  backend = createOnnxBackend();
  const app = createApp({
    registry,
    backend,
    auth: keyAuth([{ id: "browser", sha256: await sha256Hex(API_KEY) }]),
    extraRoutes: playgroundRoutes,
    log: () => {},
  });
  server = await listen(app.fetch);
  // Root in a container: Chromium's own sandbox needs user namespaces it may not get.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await backend?.close();
  tmp.cleanup();
});

/** The page, and its console errors and uncaught exceptions (a CSP violation is a console error). */
async function openPlayground(): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  const response = await page.goto(`${server.url}/`);
  expect(response?.status()).toBe(200);
  return { page, errors };
}

/** The page connected with the right key, once the API's team is listed. */
async function connectedPlayground(): Promise<{ page: Page; errors: string[] }> {
  const opened = await openPlayground();
  await opened.page.fill("#api-key", API_KEY);
  await opened.page.click("#connect");
  await opened.page.waitForSelector(`#team option[value="${TEAM}"]`, { state: "attached" });
  return opened;
}

interface ApiAnswer {
  task: { id: string; payload: { grid: string[]; start: [number, number]; goal: [number, number] } };
  answer: { kind: string; path: [number, number][]; moves: string };
  solved: boolean | null;
  turns: { agent: string; completion: string }[];
}

describe("the playground page in Chromium", { timeout: 90_000 }, () => {
  it("says which key is wrong, then lists the teams with the right one", async () => {
    const { page, errors } = await openPlayground();
    await page.fill("#api-key", "not-a-key");
    await page.click("#connect");
    await expect.poll(() => page.textContent("#teams-status")).toBe("401 unauthorized: unknown API key");
    expect(await page.isDisabled("#run")).toBe(true);

    await page.fill("#api-key", API_KEY);
    await page.click("#connect");
    await expect.poll(() => page.textContent("#teams-status")).toBe("1 team(s)");
    const options = await page.$$eval("#team option", (nodes) =>
      nodes.map((n) => (n as HTMLOptionElement).value),
    );
    expect(options).toEqual([TEAM, `${TEAM}@stable`]);
    expect(await page.textContent("#team-info")).toBe(
      "environment plan-path · roles planner, fixer · aliases stable→v1",
    );
    // The browser reports the refused request; nothing else went wrong.
    expect(errors).toEqual([
      "Failed to load resource: the server responded with a status of 401 (Unauthorized)",
    ]);
    await page.close();
  });

  it("generates a random task, streams the turns and draws the grid with the path the API returned", async () => {
    const { page, errors } = await connectedPlayground();
    await page.selectOption("#team", TEAM);
    await page.click("#random-task");
    const taskSeed = Number(await page.inputValue("#seed"));
    expect(Number.isInteger(taskSeed) && taskSeed >= 0 && taskSeed < 2 ** 31).toBe(true);
    await page.fill("#sampling-seed", String(SAMPLING_SEED));

    const solveRequest = page.waitForRequest((r) => r.url().endsWith("/v1/solve"));
    await page.click("#run");
    const request = await solveRequest;
    expect(request.postDataJSON()).toEqual({
      team: TEAM,
      input: { generate: { split: "test", seed: taskSeed } },
      options: { stream: true, seed: SAMPLING_SEED },
    });
    const response = await request.response();
    expect(response?.headers()["content-type"]).toMatch(/^text\/event-stream/);
    await page.waitForSelector("#outcome", { timeout: 30_000 });
    expect(await page.textContent("#run-status")).toBe("done");

    // The same episode from the API directly.
    const direct = await fetch(`${server.url}/v1/solve`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({
        team: TEAM,
        input: { generate: { split: "test", seed: taskSeed } },
        options: { seed: SAMPLING_SEED },
      }),
    });
    const api = (await direct.json()) as ApiAnswer;
    expect(api.answer.kind).toBe("plan-path");

    // Turns: one list item per agent turn, in order, with the agent's completion.
    const turns = await page.$$eval("#turns li.turn", (items) =>
      items.map((li) => ({
        agent: li.getAttribute("data-agent"),
        completion: li.querySelector("pre.completion")?.textContent,
      })),
    );
    expect(turns).toEqual(
      api.turns.map((t) => ({ agent: t.agent, completion: t.completion === "" ? "(empty)" : t.completion })),
    );
    expect(turns.length).toBeGreaterThan(0);

    // Outcome.
    const outcome = api.solved === true ? "solved" : api.solved === false ? "not solved" : "not judged";
    expect(await page.textContent("#outcome")).toBe(outcome);

    // The grid: every cell, walls where the task has '#', start, goal, and the API's path.
    const { grid, start, goal } = api.task.payload;
    const cells = await page.$$eval("#grid .cell", (nodes) =>
      nodes.map((n) => ({ at: n.getAttribute("data-cell"), classes: Array.from(n.classList).sort() })),
    );
    expect(cells).toHaveLength(grid.length * grid[0]!.length);
    const classesAt = new Map(cells.map((c) => [c.at, c.classes]));
    const walls = grid.flatMap((row, r) => [...row].flatMap((ch, c) => (ch === "#" ? [`${r},${c}`] : [])));
    expect(cells.filter((c) => c.classes.includes("wall")).map((c) => c.at)).toEqual(walls);
    expect(classesAt.get(`${start[0]},${start[1]}`)).toContain("start");
    expect(classesAt.get(`${goal[0]},${goal[1]}`)).toContain("goal");
    const path = new Set(api.answer.path.map(([r, c]) => `${r},${c}`));
    expect(new Set(cells.filter((c) => c.classes.includes("path")).map((c) => c.at))).toEqual(path);
    const end = api.answer.path.at(-1)!;
    expect(classesAt.get(`${end[0]},${end[1]}`)).toContain("end");
    expect(await page.textContent("#path-caption")).toContain(`path: ${api.answer.path.length - 1} move(s)`);

    // "Edit this task" puts the solved task into the JSON box, ready to run again as {task}.
    await page.click("#edit-task");
    expect(JSON.parse(await page.inputValue("#task-json"))).toEqual({ task: api.task });
    expect(await page.isChecked("input[name=task-mode][value=json]")).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("runs a pasted task and shows the API's field path for a bad one", async () => {
    const { page, errors } = await connectedPlayground();
    const puzzle = { rows: 2, cols: 3, grid: ["...", "#.."], start: [0, 0], goal: [1, 2], optimal: 3 };
    await page.fill("#task-json", JSON.stringify({ task: { payload: puzzle } }));
    await page.click("#run");
    await page.waitForSelector("#outcome", { timeout: 30_000 });
    expect(await page.$$eval("#grid .cell", (n) => n.length)).toBe(6);
    expect(await page.getAttribute('[data-cell="1,0"]', "class")).toContain("wall");

    await page.fill("#task-json", JSON.stringify({ task: { payload: { ...puzzle, optimal: 9 } } }));
    await page.click("#run");
    // The task is checked once the stream has started: the error arrives as an `error` event.
    await expect
      .poll(() => page.textContent("#run-status"))
      .toBe(
        "invalid_request: task.payload.optimal: optimal is 9 but BFS gives 3 (at input.task.payload.optimal)",
      );
    expect(await page.textContent("#result")).toBe("no result");
    expect(errors).toEqual([]);
    await page.close();
  });

  it("renders each documented answer shape (results stubbed at the network: the page is under test)", async () => {
    const { page, errors } = await connectedPlayground();
    let next = "";
    // The wire format of POST /v1/solve with stream: true, here with \r\n line ends and a comment
    // line (both allowed by the SSE grammar), answered by Chromium's network layer.
    await page.route(`${server.url}/v1/solve`, (route) =>
      route.fulfill({ status: 200, headers: { "content-type": "text/event-stream" }, body: next }),
    );
    const sse = (turns: number, result: Record<string, unknown>) =>
      [
        ": keep-alive",
        "",
        ...Array.from({ length: turns }, (_, i) => [
          "event: turn",
          `data: ${JSON.stringify({ turn: i, agent: "a", role: "a", policy: "p", prompt: "?", completion: `c${i}`, promptTokens: 1, completionTokens: 1, ms: 1, teamReward: 0, done: false })}`,
          "",
        ]).flat(),
        "event: result",
        `data: ${JSON.stringify({ team: { name: TEAM, version: 1 }, solved: null, teamReturn: 0, usage: {}, latencyMs: 1, ...result })}`,
        "",
        "",
      ].join("\r\n");
    const run = async (result: Record<string, unknown>, turns = 1) => {
      next = sse(turns, result);
      await page.fill("#task-json", "{}");
      await page.click("#run");
      await expect.poll(() => page.textContent("#run-status")).toBe("done");
    };

    // Plan-Path with a path: R R D D R from (0,0), around the wall at (1,1), to the goal (2,3).
    const path = [
      [0, 0],
      [0, 1],
      [0, 2],
      [1, 2],
      [2, 2],
      [2, 3],
    ];
    await run(
      {
        task: {
          id: "t1",
          payload: {
            rows: 3,
            cols: 4,
            grid: ["....", ".#..", "...."],
            start: [0, 0],
            goal: [2, 3],
            optimal: 5,
          },
        },
        answer: { kind: "plan-path", path, moves: "RRDDR", report: "RRDDR: solved" },
        solved: true,
      },
      3,
    );
    expect(await page.$$eval("#turns li.turn pre.completion", (n) => n.map((e) => e.textContent))).toEqual([
      "c0",
      "c1",
      "c2",
    ]);
    expect(await page.textContent("#outcome")).toBe("solved");
    const onPath = await page.$$eval("#grid .cell.path", (n) => n.map((e) => e.getAttribute("data-cell")));
    expect(onPath).toEqual(["0,0", "0,1", "0,2", "1,2", "2,2", "2,3"]);
    expect(await page.$$eval("#grid .cell.wall", (n) => n.map((e) => e.getAttribute("data-cell")))).toEqual([
      "1,1",
    ]);
    expect(await page.getAttribute('[data-cell="2,3"]', "class")).toBe("cell path goal end");
    expect(await page.textContent("#path-caption")).toBe("path: 5 move(s) RRDDR · shortest possible 5");

    // A coding task: each role's code, the program the tests ran, and every hidden test's result.
    await run({
      task: {
        id: "HumanEval/0",
        payload: { taskId: "HumanEval/0", prompt: "def add(a, b):\n", entryPoint: "add", test: "" },
      },
      answer: {
        kind: "code",
        entryPoint: "add",
        program: "def add(a, b):\n    return a + b\n",
        parts: { coder: "def add(a, b):\n    return a + b", tester: "assert add(1, 2) == 3" },
        tests: {
          passed: 1,
          total: 2,
          cases: [
            { source: "assert candidate(1, 2) == 3", passed: true },
            { source: "assert candidate(2, 2) == 5", passed: false, error: "AssertionError" },
          ],
        },
        generatedTests: { passed: 1, total: 1, cases: [{ source: "assert add(1, 2) == 3", passed: true }] },
        turns: 1,
      },
      solved: false,
    });
    expect(await page.textContent("#code")).toBe("def add(a, b):\n    return a + b\n");
    expect(await page.textContent("#result")).toContain("hidden tests: 1/2 passed");
    expect(await page.textContent("#result")).toContain("team's own tests: 1/1 passed");
    expect(await page.$$eval("#tests li", (n) => n.map((e) => [e.className, e.textContent]))).toEqual([
      ["test pass", "✓ assert candidate(1, 2) == 3"],
      ["test fail", "✗ assert candidate(2, 2) == 5 — AssertionError"],
    ]);
    expect(await page.textContent('[data-role="tester"]')).toBe("assert add(1, 2) == 3");

    // A math task: the team's answer, each agent's, and the tool's program and output.
    await run({
      task: {
        id: "gsm8k/test/0",
        payload: { id: "gsm8k/test/0", question: "What is 6 times 7?", answer: 42 },
      },
      answer: {
        kind: "math",
        answer: 42,
        agree: true,
        reasoner: 42,
        tool: { answer: 42, program: "print(6 * 7)", output: "42\n", status: "ok" },
        turns: 1,
      },
      solved: true,
    });
    expect(await page.textContent("#math-answer")).toBe("team answer: 42 (the agents agree)");
    expect(await page.textContent("#tool-program")).toBe("print(6 * 7)");
    expect(await page.textContent("#tool-output")).toBe("42\n");

    // A writing task: the texts and the reward tiers.
    await run({
      task: { id: "t3_x", payload: { kind: "tldr", id: "t3_x", title: "A post", text: "body" } },
      answer: {
        kind: "writing",
        texts: { concise: "short", detailed: "long" },
        tiers: {
          structure: 0.5,
          coordination: 0,
          vocabulary: 0,
          style: 0,
          total: 0.5,
          stoppedAt: "coordination",
        },
      },
    });
    expect(await page.$$eval("#tiers td", (n) => n.map((e) => e.textContent))).toEqual([
      "0.500",
      "0.000",
      "0.000",
      "0.000",
      "0.500",
    ]);
    expect(await page.textContent('[data-role="detailed"]')).toBe("long");

    // A board game (Sokoban, Sudoku): the final board as text.
    await run({
      task: { id: "s", payload: {} },
      answer: {
        kind: "sokoban",
        board: ["#####", "#@$.#", "#####"],
        movesTaken: 2,
        report: "RR: not solved",
      },
    });
    expect(await page.textContent("#board")).toBe("#####\n#@$.#\n#####");
    expect(await page.textContent("#outcome")).toBe("not judged");

    // Anything else (an environment of one's own): the task's fields, the transcript turn by
    // turn, and the final state as JSON.
    await run(
      {
        task: { id: "m", payload: { question: "2+2" } },
        answer: { kind: "state", state: { value: 4 } },
      },
      2,
    );
    expect(await page.$$eval("#transcript dt, #transcript dd", (n) => n.map((e) => e.textContent))).toEqual([
      "question",
      "2+2",
    ]);
    expect(await page.$$eval("#transcript ol.transcript li", (n) => n.map((e) => e.textContent))).toEqual([
      "turn 1 · a · team reward 0.000c0",
      "turn 2 · a · team reward 0.000c1",
    ]);
    expect(JSON.parse((await page.textContent("#answer-json")) ?? "")).toEqual({
      kind: "state",
      state: { value: 4 },
    });
    expect(errors).toEqual([]);
    await page.close();
  });

  it("blocks anything but its own inline script and style (CSP)", async () => {
    const { page, errors } = await openPlayground();
    // An injected inline script is refused by the policy: it never runs, and Chromium reports it.
    await page.evaluate(() => {
      const script = document.createElement("script");
      script.textContent = "document.title = 'injected'";
      document.body.append(script);
    });
    await expect.poll(() => errors.length).toBe(1);
    expect(errors[0]).toMatch(/Content Security Policy/);
    expect(await page.title()).toBe("Troupe playground");
    await page.close();
  });
});
