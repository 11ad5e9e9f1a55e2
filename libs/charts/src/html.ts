/**
 * Static HTML report pages: one self-contained file (styles inline, charts as inline SVG, no
 * script, no CDN, no external request), so it opens offline and can be attached to an issue or
 * uploaded as a CI artifact. The charts come from `lineChartSvg`/`intervalChartSvg`.
 */

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text (or an attribute value) made safe to put into HTML. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/**
 * An SVG document (from the chart functions) made ready to sit inline in a page: the XML
 * declaration dropped, and any `id` (and the `url(#…)`/`href="#…"` that point at it) prefixed, so
 * two charts on one page never share an id.
 */
export function inlineSvg(svg: string, idPrefix: string): string {
  const ids = new Set([...svg.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]!));
  let out = svg.replace(/^<\?xml[^>]*>\s*/, "");
  if (ids.size === 0) return out;
  const rename = (id: string) => (ids.has(id) ? `${idPrefix}-${id}` : id);
  out = out
    .replace(/(\sid=")([^"]+)"/g, (_m, head: string, id: string) => `${head}${rename(id)}"`)
    .replace(/url\(#([^)]+)\)/g, (_m, id: string) => `url(#${rename(id)})`)
    .replace(/(href=")#([^"]+)"/g, (_m, head: string, id: string) => `${head}#${rename(id)}"`);
  return out;
}

export interface FigureOptions {
  /** The figure's id in the page (also the prefix of the SVG's own ids). */
  readonly id: string;
  readonly svg: string;
  readonly caption?: string;
}

/** A `<figure>` holding one inline chart and its caption. */
export function htmlFigure(options: FigureOptions): string {
  const caption = options.caption ? `<figcaption>${escapeHtml(options.caption)}</figcaption>` : "";
  return `<figure class="chart" id="${escapeHtml(options.id)}">${inlineSvg(options.svg, options.id)}${caption}</figure>`;
}

/** Rows of a table (the same rows `markdownTable` takes) as an HTML table; every cell is text. */
export function htmlTable(rows: readonly Record<string, string | number>[], className = "table"): string {
  if (rows.length === 0) return "<p>(none)</p>";
  const cols = Object.keys(rows[0]!);
  const head = cols.map((c) => `<th>${escapeHtml(c)}</th>`).join("");
  const body = rows
    .map((r) => `<tr>${cols.map((c) => `<td>${escapeHtml(String(r[c] ?? ""))}</td>`).join("")}</tr>`)
    .join("\n");
  return `<table class="${escapeHtml(className)}"><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

export interface HtmlPageOptions {
  readonly title: string;
  /** A line under the title (plain text). */
  readonly subtitle?: string;
  /** The page's body: HTML built with the helpers above (callers escape their own text). */
  readonly body: string;
}

const STYLE = `
body { font-family: sans-serif; margin: 2rem auto; max-width: 1100px; padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.2rem; } .subtitle { color: #555; margin-top: 0; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2rem; margin-top: 2.2rem; }
figure.chart { display: inline-block; margin: 0.5rem 1rem 1rem 0; vertical-align: top; }
figcaption { color: #555; font-size: 0.85rem; max-width: 560px; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
pre { background: #f7f7f7; padding: 0.4rem; white-space: pre-wrap; margin: 0.2rem 0; font-size: 0.85rem; }
.verdict-pass { color: #176f2c; } .verdict-fail { color: #b00020; }
details { margin: 0.3rem 0; }
`;

/**
 * A whole page: doctype, UTF-8, a strict Content-Security-Policy (no script, nothing loaded from
 * anywhere: inline styles and inline SVG only), the title and the body.
 */
export function htmlPage(options: HtmlPageOptions): string {
  const subtitle = options.subtitle ? `<p class="subtitle">${escapeHtml(options.subtitle)}</p>\n` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(options.title)}</h1>
${subtitle}${options.body}
</body>
</html>
`;
}
