/**
 * The playground's HTML and CSS. Everything the page needs is in this response (no CDN, no build
 * step, no files read at run time), so it is served the same way by Node and by Workers; the
 * script is client.ts.
 */

export const PLAYGROUND_STYLE = `
:root { color-scheme: light dark; --fg: #1d2230; --muted: #667085; --bg: #f7f7f9; --card: #fff;
  --line: #d9dce3; --accent: #3056d3; --ok: #1a7f37; --bad: #c4321f; --wall: #2f3542; --path: #f5c84c; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e8ee; --muted: #9aa3b5; --bg: #14161c; --card: #1d2029;
  --line: #343a48; --wall: #7b8496; --path: #b8901f; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { padding: 14px 24px; border-bottom: 1px solid var(--line); display: flex; gap: 12px; align-items: baseline; }
header h1 { font-size: 20px; margin: 0; }
header a { color: var(--muted); font-size: 13px; }
main { display: grid; grid-template-columns: minmax(300px, 380px) 1fr; gap: 16px; padding: 16px 24px; }
@media (max-width: 860px) { main { grid-template-columns: 1fr; } }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; margin-bottom: 14px; }
section h2 { font-size: 14px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 8px; }
label { display: block; font-size: 13px; color: var(--muted); margin: 8px 0 3px; }
input, select, textarea, button { font: inherit; color: inherit; }
input[type=radio] { width: auto; margin: 0 4px 0 0; }
.actions { margin-top: 12px; }
input:not([type=radio]), select, textarea { width: 100%; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); }
textarea { min-height: 120px; font: 12px/1.4 ui-monospace, monospace; }
button { padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
button:disabled { opacity: .5; cursor: default; }
.row { display: flex; gap: 8px; align-items: end; }
.row > * { flex: 1; }
.row > button { flex: none; }
.muted { color: var(--muted); font-size: 13px; }
.status { font-size: 13px; min-height: 1.4em; margin-top: 8px; }
.status.error, .error { color: var(--bad); }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font: 12px/1.4 ui-monospace, monospace; }
#turns { list-style: none; margin: 0; padding: 0; }
.turn { border-left: 3px solid var(--accent); padding: 4px 10px; margin: 8px 0; }
.turn .meta { font-size: 12px; color: var(--muted); }
.turn details { margin-top: 4px; }
.turn summary { font-size: 12px; color: var(--muted); cursor: pointer; }
.outcome { font-weight: 600; }
.outcome.solved { color: var(--ok); }
.outcome.unsolved { color: var(--bad); }
table { border-collapse: collapse; font-size: 13px; }
td, th { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; }
.grid { display: inline-grid; gap: 2px; margin: 10px 0; }
.cell { width: 26px; height: 26px; border-radius: 3px; background: var(--bg); border: 1px solid var(--line);
  display: flex; align-items: center; justify-content: center; font: 600 12px ui-monospace, monospace; }
.cell.wall { background: var(--wall); border-color: var(--wall); }
.cell.path { background: var(--path); }
.cell.start { outline: 2px solid var(--accent); }
.cell.goal { outline: 2px solid var(--ok); }
.cell.end { box-shadow: inset 0 0 0 3px var(--fg); }
.legend { font-size: 12px; color: var(--muted); }
.test.pass { color: var(--ok); }
.test.fail { color: var(--bad); }
`;

/** The page around the script; `script` and `style` are inlined (their hashes go in the CSP). */
export function playgroundHtml(script: string, style: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Troupe playground</title>
<link rel="icon" href="data:,">
<style>${style}</style>
</head>
<body>
<header><h1>Troupe playground</h1><span class="muted">run a published team of agents on a task</span>
<a href="/docs">API reference</a></header>
<main>
<div>
  <section>
    <h2>Team</h2>
    <label for="api-key">API key</label>
    <div class="row"><input id="api-key" type="password" autocomplete="off" placeholder="Bearer key">
      <button id="connect" type="button">Load teams</button></div>
    <label for="team">Team</label>
    <select id="team" disabled><option value="">(load the teams first)</option></select>
    <div id="team-info" class="muted"></div>
    <div id="teams-status" class="status"></div>
  </section>
  <section>
    <h2>Task</h2>
    <label><input type="radio" name="task-mode" value="generate" checked> generate one from a seed</label>
    <div class="row"><div><label for="seed">Task seed</label><input id="seed" type="number" min="0" step="1" value="1"></div>
      <button id="random-task" type="button">Random</button></div>
    <label for="split">Split</label>
    <select id="split"><option value="test" selected>test (held out)</option><option value="train">train</option></select>
    <label><input type="radio" name="task-mode" value="json"> or paste a task (JSON)</label>
    <textarea id="task-json" spellcheck="false" placeholder='{"task": {"id": "...", "payload": {...}}}'></textarea>
    <label>Options</label>
    <div class="row">
      <div><label for="max-turns">max turns</label><input id="max-turns" type="number" min="1" step="1" placeholder="team's"></div>
      <div><label for="temperature">temperature</label><input id="temperature" type="number" min="0" max="2" step="0.1" placeholder="team's"></div>
      <div><label for="sampling-seed">sampling seed</label><input id="sampling-seed" type="number" min="0" step="1" placeholder="random"></div>
    </div>
    <div class="row actions"><button id="run" class="primary" type="button" disabled>Run</button>
      <button id="stop" type="button" disabled>Stop</button><span></span></div>
    <div id="run-status" class="status"></div>
  </section>
</div>
<div>
  <section>
    <h2>Turns</h2>
    <ol id="turns"></ol>
    <div id="turns-empty" class="muted">The agents' turns appear here as they happen.</div>
  </section>
  <section>
    <h2>Result</h2>
    <div id="result" class="muted">No run yet.</div>
  </section>
</div>
</main>
<script type="module">${script}</script>
</body>
</html>
`;
}
