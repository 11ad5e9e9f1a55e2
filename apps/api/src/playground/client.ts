/**
 * The playground's browser script (an ES module, inlined into the page by routes.ts).
 *
 * It is plain modern JavaScript kept in a string because the page must work without a build step
 * on Node and on Workers alike (no bundler, no files read at run time). So that the string can stay
 * a String.raw literal, the script uses no backticks and no dollar-brace sequences.
 *
 * Flow: API key → GET /v1/teams → pick a team → a task (generated from a seed, or pasted JSON) →
 * POST /v1/solve with stream: true → the turns arrive as server-sent events and are listed as they
 * come → the result is rendered by the answer's kind: the Plan-Path grid with walls, start, goal and
 * the path walked (and each turn's tool call, output and plan for the tool-call roles); a board; a coding team's code, the program the tests ran and each test's result;
 * a math team's answer with the tool's program and output; a writing team's texts and reward tiers;
 * for anything else (an environment of one's own) the task's fields and the turn-by-turn transcript.
 *
 * The SSE stream is read from fetch's ReadableStream: EventSource can only GET and cannot send an
 * Authorization header. The parser is the few lines of the WHATWG "event stream" grammar the API
 * produces (event/data fields, blank-line separators, any newline convention); a library would
 * need a bundler to reach the browser.
 */
export const PLAYGROUND_SCRIPT = String.raw`
const $ = (id) => document.getElementById(id);
const KEY_STORAGE = "troupe.playground.apiKey";
let teams = [];
let running = null;
/** The current solve's turns as they arrived (a streamed result carries none of its own). */
let turnsSeen = [];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function setStatus(id, text, isError) {
  const node = $(id);
  node.textContent = text;
  node.classList.toggle("error", Boolean(isError));
}

function authHeaders() {
  const key = $("api-key").value.trim();
  const headers = { "content-type": "application/json" };
  if (key !== "") headers.authorization = "Bearer " + key;
  return headers;
}

/** An API error ({code, message, path?}) as one line; the field path unless the message starts with it. */
function formatError(error) {
  const path = Array.isArray(error.path) && error.path.length ? error.path.join(".") : "";
  const at = path !== "" && !String(error.message).startsWith(path) ? " (at " + path + ")" : "";
  return error.code + ": " + error.message + at;
}

/** A failed response's error body ({error: {code, message, path?}}) as one line, with the status. */
async function describeError(response) {
  try {
    const body = await response.json();
    if (body && body.error) return response.status + " " + formatError(body.error);
  } catch {}
  return "HTTP " + response.status + " " + response.statusText;
}

// ------------------------------------------------------------------------------------------
// Teams

function describeTeam(team) {
  const latest = team.latest || {};
  const parts = [];
  if (latest.environment) parts.push("environment " + latest.environment.name);
  if (Array.isArray(latest.roles)) parts.push("roles " + latest.roles.map((r) => r.id).join(", "));
  if (latest.eval) parts.push("success " + (100 * latest.eval.successRate).toFixed(1) + "% on " + latest.eval.tasks + " tasks");
  const aliases = Object.entries(team.aliases || {}).map(([a, v]) => a + "→v" + v);
  if (aliases.length) parts.push("aliases " + aliases.join(", "));
  return parts.join(" · ");
}

async function loadTeams() {
  sessionStorage.setItem(KEY_STORAGE, $("api-key").value.trim());
  setStatus("teams-status", "loading teams…");
  let response;
  try {
    response = await fetch("/v1/teams", { headers: authHeaders() });
  } catch (error) {
    setStatus("teams-status", "cannot reach the API: " + error.message, true);
    return;
  }
  if (!response.ok) {
    setStatus("teams-status", await describeError(response), true);
    return;
  }
  teams = (await response.json()).teams || [];
  const select = $("team");
  select.replaceChildren();
  for (const team of teams) {
    const versions = team.versions || [];
    const latest = versions.length ? versions[versions.length - 1] : team.latest && team.latest.version;
    select.append(el("option", { value: team.name }, team.name + " (v" + latest + ")"));
    for (const alias of Object.keys(team.aliases || {})) {
      select.append(el("option", { value: team.name + "@" + alias }, team.name + "@" + alias));
    }
  }
  select.disabled = teams.length === 0;
  $("run").disabled = teams.length === 0;
  setStatus("teams-status", teams.length ? teams.length + " team(s)" : "no published teams", teams.length === 0);
  showTeamInfo();
}

function showTeamInfo() {
  const name = $("team").value.split("@")[0];
  const team = teams.find((t) => t.name === name);
  $("team-info").textContent = team ? describeTeam(team) : "";
}

// ------------------------------------------------------------------------------------------
// Task and options

function taskMode() {
  return document.querySelector("input[name=task-mode]:checked").value;
}

function setTaskMode(mode) {
  document.querySelector("input[name=task-mode][value=" + mode + "]").checked = true;
}

/** The request's input: {generate: {split, seed}} or {task} (a pasted task, or {task: …} itself). */
function solveInput() {
  if (taskMode() === "generate") {
    const seed = Number($("seed").value);
    if (!Number.isInteger(seed) || seed < 0) throw new Error("the task seed must be a whole number ≥ 0");
    return { generate: { split: $("split").value, seed } };
  }
  let value;
  try {
    value = JSON.parse($("task-json").value);
  } catch (error) {
    throw new Error("the pasted task is not JSON: " + error.message);
  }
  if (value && typeof value === "object" && ("task" in value || "generate" in value)) return value;
  return { task: value };
}

function numberField(id, name, options, integer) {
  const text = $(id).value.trim();
  if (text === "") return;
  const value = Number(text);
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value))) throw new Error(name + " must be a number");
  options[name] = value;
}

function solveOptions() {
  const options = { stream: true };
  numberField("max-turns", "maxTurns", options, true);
  numberField("temperature", "temperature", options, false);
  numberField("sampling-seed", "seed", options, true);
  return options;
}

// ------------------------------------------------------------------------------------------
// Server-sent events from a fetch body

/** One event block ("event: x\ndata: …") → {event, data}, or null for comments/keep-alives. */
function parseEventBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  return data.length ? { event, data: data.join("\n") } : null;
}

async function* serverSentEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    // Lines may end in \r\n, \n or \r; keep a trailing \r until we know whether \n follows it.
    const held = buffer.endsWith("\r") ? "\r" : "";
    buffer = buffer.slice(0, buffer.length - held.length).replace(/\r\n?/g, "\n");
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const event = parseEventBlock(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event) yield event;
      end = buffer.indexOf("\n\n");
    }
    buffer += held;
  }
  const last = parseEventBlock(buffer.replace(/\r\n?/g, "\n"));
  if (last) yield last;
}

// ------------------------------------------------------------------------------------------
// Turns

function addTurn(turn) {
  turnsSeen.push(turn);
  $("turns-empty").hidden = true;
  const meta =
    "turn " + turn.turn + " · " + turn.agent + (turn.role && turn.role !== turn.agent ? " (" + turn.role + ")" : "") +
    " · policy " + turn.policy + " · " + turn.promptTokens + "+" + turn.completionTokens + " tokens · " +
    Math.round(turn.ms) + " ms · team reward " + Number(turn.teamReward).toFixed(3) + (turn.done ? " · done" : "");
  $("turns").append(
    el("li", { class: "turn", "data-agent": turn.agent },
      el("div", { class: "meta" }, meta),
      el("pre", { class: "completion" }, turn.completion === "" ? "(empty)" : turn.completion),
      el("details", {}, el("summary", {}, "prompt"), el("pre", {}, turn.prompt))),
  );
}

// ------------------------------------------------------------------------------------------
// Results

const MOVES = { U: [-1, 0], D: [1, 0], L: [0, -1], R: [0, 1] };

function isPos(value) {
  return Array.isArray(value) && value.length === 2 && value.every(Number.isInteger);
}

function isPlanPath(payload) {
  return payload && Array.isArray(payload.grid) && payload.grid.every((row) => typeof row === "string") &&
    isPos(payload.start) && isPos(payload.goal);
}

/** U/D/L/R letters in an answer: a move string, or {moves | plan | path: string | letters[]}. */
function movesOf(answer) {
  let moves = answer;
  if (moves && typeof moves === "object" && !Array.isArray(moves)) moves = moves.moves ?? moves.plan ?? moves.path;
  if (Array.isArray(moves) && moves.every((m) => typeof m === "string")) moves = moves.join("");
  if (typeof moves !== "string") return null;
  const letters = moves.toUpperCase().replace(/[^UDLR]/g, "");
  return letters === "" && moves.trim() !== "" ? null : letters;
}

/** The cells visited, from an answer's path of [row, col] cells or by walking its moves. */
function walkedCells(puzzle, answer) {
  const listed = answer && typeof answer === "object" && !Array.isArray(answer) ? answer.cells ?? answer.path : answer;
  if (Array.isArray(listed) && listed.length && listed.every(isPos)) return { cells: listed, stopped: null };
  const moves = movesOf(answer);
  if (moves === null) return null;
  const cells = [puzzle.start];
  let stopped = null;
  for (const move of moves) {
    const [r, c] = cells[cells.length - 1];
    const next = [r + MOVES[move][0], c + MOVES[move][1]];
    const row = puzzle.grid[next[0]];
    if (row === undefined || next[1] < 0 || next[1] >= row.length) { stopped = "off grid"; break; }
    if (row[next[1]] === "#") { stopped = "blocked"; break; }
    cells.push(next);
  }
  return { cells, stopped };
}

function renderPlanPath(puzzle, answer) {
  const walk = walkedCells(puzzle, answer);
  const onPath = new Set((walk ? walk.cells : []).map((p) => p[0] + "," + p[1]));
  const end = walk && walk.cells.length ? walk.cells[walk.cells.length - 1] : null;
  const cols = puzzle.grid[0].length;
  const grid = el("div", { class: "grid", id: "grid", "data-rows": puzzle.grid.length, "data-cols": cols });
  grid.style.gridTemplateColumns = "repeat(" + cols + ", 26px)";
  puzzle.grid.forEach((row, r) => {
    [...row].forEach((ch, c) => {
      const classes = ["cell"];
      let mark = "";
      if (ch === "#") classes.push("wall");
      if (onPath.has(r + "," + c)) classes.push("path");
      if (r === puzzle.start[0] && c === puzzle.start[1]) { classes.push("start"); mark = "S"; }
      if (r === puzzle.goal[0] && c === puzzle.goal[1]) { classes.push("goal"); mark = "G"; }
      if (end && end[0] === r && end[1] === c) { classes.push("end"); mark = mark || "A"; }
      grid.append(el("div", { class: classes.join(" "), "data-cell": r + "," + c, title: "(" + r + "," + c + ")" }, mark));
    });
  });
  const moves = movesOf(answer);
  const caption = walk
    ? "path: " + (walk.cells.length - 1) + " move(s)" + (moves ? " " + moves : "") + (walk.stopped ? ", then " + walk.stopped : "") +
      (Number.isInteger(puzzle.optimal) ? " · shortest possible " + puzzle.optimal : "")
    : "no path in the answer";
  return el("div", {}, grid,
    el("div", { class: "legend", id: "path-caption" }, caption),
    answer && typeof answer.report === "string" ? el("div", { class: "legend" }, "last plan: " + answer.report) : null,
    answer && Array.isArray(answer.calls) ? toolCalls(answer.calls) : null,
    el("div", { class: "legend" }, "S start · G goal · A where the agents ended · dark cells are walls"));
}

/** The tool-call roles: each turn's command, what the tool answered, and the plan. */
function toolCalls(calls) {
  const shown = (text) => (text === null || text === undefined ? "(did not act)" : JSON.stringify(text));
  return el("ol", { id: "tool-calls", class: "legend" }, calls.map((call) =>
    el("li", {}, "tool " + shown(call.command) + " → " + (typeof call.output === "string" ? call.output : "(no call)") +
      " · plan " + shown(call.plan))));
}

/** Sokoban, Sudoku: the final board as text, and the environment's last report. */
function renderBoard(answer) {
  return el("div", {}, el("pre", { id: "board" }, answer.board.join("\n")),
    el("div", { class: "legend" }, (answer.kind || "board") + " · " + answer.movesTaken + " move(s)" + (answer.report ? " · " + answer.report : "")),
    Array.isArray(answer.calls) ? toolCalls(answer.calls) : null);
}

/** A test run of a code answer: "label: p/t passed", then each test with its outcome. */
function testRun(label, run, id) {
  if (!run) return [el("div", { class: "muted" }, label + ": not run (no code)")];
  const parts = [el("h3", {}, label + ": " + run.passed + "/" + run.total + " passed")];
  if (run.error) parts.push(el("div", { class: "error" }, "the program did not get to the tests: " + run.error));
  parts.push(el("ul", { id }, run.cases.map((t) =>
    el("li", { class: "test " + (t.passed ? "pass" : "fail") }, (t.passed ? "✓ " : "✗ ") + t.source + (t.error ? " — " + t.error : "")))));
  return parts;
}

/** A coding team's answer: the task, each role's code, the program the tests ran, and the results. */
function renderCode(payload, answer) {
  const parts = [el("h3", {}, (payload && payload.taskId) || "task"), el("pre", {}, (payload && payload.prompt) || "")];
  for (const [role, code] of Object.entries(answer.parts)) {
    parts.push(el("h3", {}, role + (role === "tester" ? " (tests written by the team)" : "")), el("pre", { class: "part", "data-role": role }, code));
  }
  parts.push(el("details", {}, el("summary", {}, "program the tests ran"), el("pre", { id: "code" }, answer.program)));
  parts.push(...testRun("hidden tests", answer.tests, "tests"));
  if (answer.generatedTests !== undefined) parts.push(...testRun("team's own tests", answer.generatedTests, "generated-tests"));
  return el("div", {}, parts);
}

const num = (x) => (x === null || x === undefined ? "no answer" : String(x));

/** A math team's answer: the team's number, each agent's, and the tool's program and output. */
function renderMath(payload, answer) {
  const parts = [
    el("pre", {}, (payload && payload.question) || ""),
    el("div", { id: "math-answer" }, "team answer: " + num(answer.answer) + (answer.agree ? " (the agents agree)" : " (the agents disagree)")),
    el("div", { class: "legend" }, "reasoner: " + num(answer.reasoner) + " · tool: " + num(answer.tool && answer.tool.answer) + " · " + answer.turns + " turn(s)"),
  ];
  if (answer.tool) {
    parts.push(el("h3", {}, "tool program"), el("pre", { id: "tool-program" }, answer.tool.program));
    parts.push(el("h3", {}, "tool output (" + answer.tool.status + ")"), el("pre", { id: "tool-output" }, answer.tool.output));
    if (answer.tool.error) parts.push(el("div", { class: "error" }, answer.tool.error));
  }
  return el("div", {}, parts);
}

/** A writing team's texts and the reward tiers they reached. */
function renderWriting(payload, answer) {
  const parts = [el("details", {}, el("summary", {}, (payload && payload.title) || "source text"), el("pre", {}, (payload && payload.text) || ""))];
  for (const [role, text] of Object.entries(answer.texts)) parts.push(el("h3", {}, role), el("pre", { class: "text", "data-role": role }, text));
  if (answer.tiers) {
    const tiers = ["structure", "coordination", "vocabulary", "style", "total"];
    parts.push(el("table", { id: "tiers" }, el("tr", {}, tiers.map((t) => el("th", {}, t))),
      el("tr", {}, tiers.map((t) => el("td", {}, answer.tiers[t].toFixed(3))))));
    if (answer.tiers.stoppedAt) parts.push(el("div", { class: "legend" }, "stopped at the " + answer.tiers.stoppedAt + " tier"));
  }
  return el("div", {}, parts);
}

function renderResult(result) {
  const box = $("result");
  box.classList.remove("muted");
  const solved = result.solved === true ? "solved" : result.solved === false ? "not solved" : "not judged";
  const summary = el("div", {},
    el("span", { id: "outcome", class: "outcome " + (result.solved === true ? "solved" : result.solved === false ? "unsolved" : "") }, solved),
    " · team return " + Number(result.teamReturn).toFixed(3) + " · " + Math.round(result.latencyMs) + " ms" +
      (result.team ? " · " + result.team.name + " v" + result.team.version : "") +
      (result.task ? " · task " + result.task.id : ""));
  const usage = Object.entries(result.usage || {});
  const usageTable = usage.length
    ? el("table", {}, el("tr", {}, el("th", {}, "role"), el("th", {}, "calls"), el("th", {}, "prompt tokens"), el("th", {}, "completion tokens")),
        usage.map(([role, u]) => el("tr", {}, el("td", {}, role), el("td", {}, u.calls), el("td", {}, u.promptTokens), el("td", {}, u.completionTokens))))
    : null;
  const payload = result.task && result.task.payload;
  const answer = result.answer;
  const kind = answer && answer.kind;
  let view;
  if (isPlanPath(payload)) view = renderPlanPath(payload, answer);
  else if (kind === "code") view = renderCode(payload, answer);
  else if (kind === "math") view = renderMath(payload, answer);
  else if (kind === "writing") view = renderWriting(payload, answer);
  else if (answer && Array.isArray(answer.board)) view = renderBoard(answer);
  else view = renderTranscript(payload, turnsSeen, answer);
  const edit = result.task
    ? el("button", { type: "button", id: "edit-task" }, "Edit this task")
    : null;
  if (edit) edit.addEventListener("click", () => {
    $("task-json").value = JSON.stringify({ task: result.task }, null, 2);
    setTaskMode("json");
  });
  box.replaceChildren(summary, view, usageTable || "", edit || "",
    el("details", {}, el("summary", {}, "task JSON"), el("pre", {}, JSON.stringify(result.task, null, 2))));
}

/**
 * Any task without a view of its own (an environment of one's own): the task's fields, then each
 * agent's answer turn by turn with the team reward it earned, and the final state as JSON.
 */
function renderTranscript(payload, turns, answer) {
  const fields = payload && typeof payload === "object" && !Array.isArray(payload) ? Object.entries(payload) : [];
  const show = (value) => (typeof value === "string" ? value : JSON.stringify(value));
  return el("div", { id: "transcript" },
    el("h3", {}, "task"),
    el("dl", { class: "task-fields" }, fields.flatMap(([name, value]) => [el("dt", {}, name), el("dd", {}, show(value))])),
    el("h3", {}, "transcript"),
    el("ol", { class: "transcript" }, turns.map((turn) =>
      el("li", { "data-agent": turn.agent },
        el("div", { class: "meta" }, "turn " + (turn.turn + 1) + " · " + turn.agent + " · team reward " + Number(turn.teamReward).toFixed(3)),
        el("pre", { class: "completion" }, turn.completion === "" ? "(empty)" : turn.completion)))),
    el("details", {}, el("summary", {}, "final state (JSON)"), el("pre", { id: "answer-json" }, JSON.stringify(answer, null, 2))));
}

// ------------------------------------------------------------------------------------------
// Run

async function run() {
  let body;
  try {
    body = { team: $("team").value, input: solveInput(), options: solveOptions() };
  } catch (error) {
    setStatus("run-status", error.message, true);
    return;
  }
  $("turns").replaceChildren();
  turnsSeen = [];
  $("turns-empty").hidden = false;
  $("result").replaceChildren("running…");
  $("result").classList.add("muted");
  setStatus("run-status", "running " + body.team + "…");
  const controller = new AbortController();
  running = controller;
  $("run").disabled = true;
  $("stop").disabled = false;
  let finished = false;
  try {
    const response = await fetch("/v1/solve", {
      method: "POST", headers: authHeaders(), body: JSON.stringify(body), signal: controller.signal,
    });
    if (!response.ok) throw new Error(await describeError(response));
    if (!(response.headers.get("content-type") || "").includes("text/event-stream")) {
      const result = await response.json();
      (result.turns || []).forEach(addTurn);
      renderResult(result);
      finished = true;
    } else {
      for await (const event of serverSentEvents(response.body)) {
        const data = JSON.parse(event.data);
        if (event.event === "turn") addTurn(data);
        else if (event.event === "result") { renderResult(data); finished = true; }
        else if (event.event === "error") throw new Error(formatError(data.error));
      }
    }
    if (!finished) throw new Error("the stream ended without a result");
    setStatus("run-status", "done");
  } catch (error) {
    const stopped = error.name === "AbortError";
    setStatus("run-status", stopped ? "stopped" : error.message, !stopped);
    if (!finished) $("result").replaceChildren(stopped ? "stopped" : "no result");
  } finally {
    running = null;
    $("run").disabled = false;
    $("stop").disabled = true;
  }
}

$("api-key").value = sessionStorage.getItem(KEY_STORAGE) || "";
$("connect").addEventListener("click", loadTeams);
$("api-key").addEventListener("keydown", (e) => { if (e.key === "Enter") loadTeams(); });
$("team").addEventListener("change", showTeamInfo);
$("random-task").addEventListener("click", () => {
  $("seed").value = String(Math.floor(Math.random() * 2 ** 31));
  setTaskMode("generate");
});
$("seed").addEventListener("input", () => setTaskMode("generate"));
$("task-json").addEventListener("input", () => setTaskMode("json"));
$("run").addEventListener("click", run);
$("stop").addEventListener("click", () => running && running.abort());
if ($("api-key").value !== "") loadTeams();
`;
