import { DOMParser, type Element } from "@xmldom/xmldom";
import { describe, expect, it } from "vitest";
import { intervalChartSvg, type LineChartOptions, lineChartSvg, vegaLiteSvg } from "../src/charts.ts";

/** Parses strictly: any XML error (or warning) fails the test. */
function parseSvg(svg: string) {
  const doc = new DOMParser({
    onError: (level, message) => {
      throw new Error(`SVG is not well-formed XML (${level}): ${message}`);
    },
  }).parseFromString(svg, "image/svg+xml");
  const root = doc.documentElement!;
  expect(root.tagName).toBe("svg");
  expect(root.getAttribute("xmlns")).toBe("http://www.w3.org/2000/svg");
  return root;
}

/** The `g` groups whose class list has every given class. */
function groups(root: Element, ...classes: string[]): Element[] {
  return Array.from(root.getElementsByTagName("g")).filter((g) => {
    const own = (g.getAttribute("class") ?? "").split(/\s+/);
    return classes.every((c) => own.includes(c));
  });
}

const paths = (els: Element[]) => els.flatMap((g) => Array.from(g.getElementsByTagName("path")));
const texts = (root: Element) => Array.from(root.getElementsByTagName("text")).map((t) => t.textContent);

const curves: LineChartOptions = {
  title: "Held-out success <by step> & seed",
  subtitle: "mean over 3 seeds, 95% t-interval",
  xLabel: "RL step",
  yLabel: "held-out success",
  yFormat: ".0%",
  yDomain: [0, 1],
  series: [
    {
      name: "optimizer.lr=0.0003,strategy.candidates=8",
      points: [
        { x: 0, y: 0.2, low: 0.1, high: 0.3 },
        { x: 10, y: 0.3, low: 0.2, high: 0.4 },
        { x: 20, y: 0.35, low: 0.25, high: 0.45 },
      ],
    },
    {
      name: "optimizer.lr=0.0001,strategy.candidates=4",
      points: [
        { x: 0, y: 0.25 },
        { x: 10, y: 0.28 },
      ],
    },
    { name: "one point", points: [{ x: 0, y: 0.5, low: 0.4, high: 0.6 }] },
  ],
};

describe("lineChartSvg", () => {
  it("draws one line per series, a point per data point, bands only where intervals are given", async () => {
    const root = parseSvg(await lineChartSvg(curves));
    expect(groups(root, "mark-line", "line_marks")).toHaveLength(3);
    expect(paths(groups(root, "mark-line", "line_marks"))).toHaveLength(3);
    expect(paths(groups(root, "mark-symbol", "point_marks"))).toHaveLength(6);
    // Series 1 and 3 have intervals, series 2 has none.
    expect(paths(groups(root, "mark-area", "band_marks"))).toHaveLength(2);
    const labels = texts(root);
    expect(labels).toContain("Held-out success <by step> & seed");
    expect(labels).toContain("mean over 3 seeds, 95% t-interval");
    expect(labels).toEqual(expect.arrayContaining(["RL step", "held-out success", "100%", "0%"]));
    // The legend names every series in full, in the order given.
    const names = curves.series.map((s) => s.name);
    expect(labels.filter((t) => names.includes(t!))).toEqual(names);
  });

  it("is deterministic: the same input gives the same bytes, also after other charts", async () => {
    const first = await lineChartSvg(curves);
    await intervalChartSvg({ title: "other", valueLabel: "v", rows: [{ category: "a", value: 1 }] });
    expect(await lineChartSvg(curves)).toBe(first);
  });

  it("skips non-finite values and draws no band layer without intervals", async () => {
    const root = parseSvg(
      await lineChartSvg({
        title: "t",
        xLabel: "x",
        yLabel: "y",
        series: [
          {
            name: "s",
            points: [
              { x: 0, y: 1 },
              { x: 1, y: Number.NaN },
              { x: 2, y: 2 },
            ],
          },
        ],
      }),
    );
    expect(paths(groups(root, "mark-symbol", "point_marks"))).toHaveLength(2);
    expect(groups(root, "band_marks")).toHaveLength(0);
  });

  it("refuses two series with the same name", async () => {
    await expect(
      lineChartSvg({
        title: "t",
        xLabel: "x",
        yLabel: "y",
        series: [
          { name: "a", points: [] },
          { name: "a", points: [] },
        ],
      }),
    ).rejects.toThrow(/series names must be unique/);
  });
});

describe("intervalChartSvg", () => {
  it("draws a point per row, a rule per interval and a tick per sample, with a legend for series", async () => {
    const svg = await intervalChartSvg({
      title: "Final held-out success",
      valueLabel: "success",
      categoryLabel: "point",
      valueFormat: ".0%",
      valueDomain: [0, 1],
      rows: [
        { category: "lr=1e-4", series: "start", value: 0.3, low: 0.2, high: 0.4, samples: [0.25, 0.35] },
        { category: "lr=1e-4", series: "final", value: 0.4, low: 0.3, high: 0.5, samples: [0.35, 0.45] },
        { category: "lr=3e-4", series: "start", value: 0.3, low: 0.2, high: 0.4 },
        { category: "lr=3e-4", series: "final", value: 0.5 },
      ],
    });
    const root = parseSvg(svg);
    expect(paths(groups(root, "mark-symbol", "value_marks"))).toHaveLength(4);
    expect(
      Array.from(groups(root, "mark-rule", "interval_marks")[0]!.getElementsByTagName("line")),
    ).toHaveLength(3);
    expect(paths(groups(root, "mark-rect", "sample_marks"))).toHaveLength(4);
    const labels = texts(root);
    expect(labels).toEqual(
      expect.arrayContaining(["Final held-out success", "success", "point", "lr=1e-4", "lr=3e-4"]),
    );
    expect(labels).toEqual(expect.arrayContaining(["start", "final"]));
  });

  it("one unnamed series: no legend", async () => {
    const root = parseSvg(
      await intervalChartSvg({
        title: "t",
        valueLabel: "v",
        rows: [
          { category: "a", value: 1, low: 0, high: 2 },
          { category: "b", value: 2 },
        ],
      }),
    );
    expect(paths(groups(root, "mark-symbol", "value_marks"))).toHaveLength(2);
    expect(groups(root, "role-legend")).toHaveLength(0);
  });
});

describe("vegaLiteSvg", () => {
  it("renders any Vega-Lite spec", async () => {
    const root = parseSvg(
      await vegaLiteSvg({
        data: { values: [{ a: "x", b: 1 }] },
        mark: "bar",
        encoding: { x: { field: "a", type: "nominal" }, y: { field: "b", type: "quantitative" } },
      }),
    );
    expect(paths(groups(root, "mark-rect"))).toHaveLength(1);
  });
});
