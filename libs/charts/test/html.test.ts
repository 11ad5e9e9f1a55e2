import { describe, expect, it } from "vitest";
import { lineChartSvg } from "../src/charts.ts";
import { escapeHtml, htmlFigure, htmlPage, htmlTable, inlineSvg } from "../src/html.ts";

describe("html report helpers", () => {
  it("escapes text and table cells", () => {
    expect(escapeHtml(`<a href="x">&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    const table = htmlTable([{ arm: "<b>", "success %": 12.5 }]);
    expect(table).toContain("<th>success %</th>");
    expect(table).toContain("<td>&lt;b&gt;</td><td>12.5</td>");
    expect(htmlTable([])).toBe("<p>(none)</p>");
  });

  it("prefixes SVG ids and the references to them, and leaves id-free SVG alone", () => {
    const svg = `<?xml version="1.0"?><svg><clipPath id="clip1"/><g clip-path="url(#clip1)"/><use href="#clip1"/></svg>`;
    expect(inlineSvg(svg, "c2")).toBe(
      `<svg><clipPath id="c2-clip1"/><g clip-path="url(#c2-clip1)"/><use href="#c2-clip1"/></svg>`,
    );
    expect(inlineSvg("<svg><g/></svg>", "x")).toBe("<svg><g/></svg>");
  });

  it("builds one self-contained page: no script, nothing loaded from elsewhere", async () => {
    const svg = await lineChartSvg({
      title: "t",
      xLabel: "x",
      yLabel: "y",
      series: [{ name: "a", points: [{ x: 0, y: 1 }] }],
    });
    const page = htmlPage({
      title: "Run <r1>",
      subtitle: "a & b",
      body: htmlFigure({ id: "curve", svg, caption: "one point" }),
    });
    expect(page.startsWith("<!doctype html>")).toBe(true);
    expect(page).toContain("<title>Run &lt;r1&gt;</title>");
    expect(page).toContain(`<figure class="chart" id="curve"><svg`);
    expect(page).toContain("<figcaption>one point</figcaption>");
    expect(page).not.toMatch(/<script|https?:\/\/(?!www\.w3\.org)/);
  });
});
