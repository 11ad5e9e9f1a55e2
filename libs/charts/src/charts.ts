/**
 * Charts as SVG strings, drawn in Node without a browser or a canvas: a Vega-Lite spec is compiled
 * to Vega (`vega-lite`'s `compile`) and rendered by a headless Vega `View` (renderer "none") with
 * `View#toSVG()`. Text widths are Vega's estimate (no canvas to measure fonts), so the same input
 * gives the same bytes on every machine.
 *
 * Two ready-made charts cover learning curves and final results; `vegaLiteSvg` renders any other
 * Vega-Lite spec, and the `*Spec` builders return the specs themselves (for vega-embed in an HTML
 * page, say). Every mark layer is named, so the SVG's groups carry stable classes that tests and
 * stylesheets can select: `band`, `line` and `point` in line charts; `interval`, `value` and
 * `sample` in interval charts.
 */
import { logger, None, parse as parseVega, View } from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

export type { TopLevelSpec } from "vega-lite";

/** One point of a line: `y` at `x`, with an optional interval [low, high] drawn as a band. */
export interface LinePoint {
  readonly x: number;
  readonly y: number;
  readonly low?: number;
  readonly high?: number;
}

export interface LineSeries {
  /** The legend's label; also the colour key (series keep the order given). */
  readonly name: string;
  readonly points: readonly LinePoint[];
}

/** Common options of both charts. */
export interface ChartFrame {
  readonly title: string;
  readonly subtitle?: string;
  /** Plot area in pixels (axes, title and legend come on top). Defaults 480 × 300. */
  readonly width?: number;
  readonly height?: number;
}

export interface LineChartOptions extends ChartFrame {
  readonly xLabel: string;
  readonly yLabel: string;
  readonly series: readonly LineSeries[];
  /** Fixed axis ranges (default: fitted to the data, including bands). */
  readonly xDomain?: readonly [number, number];
  readonly yDomain?: readonly [number, number];
  /** d3-format strings for the axis labels, e.g. ".0%" for rates in [0, 1]. */
  readonly xFormat?: string;
  readonly yFormat?: string;
  /** Smallest step between x ticks, e.g. 1 for steps or epochs (no ticks at 0.5). */
  readonly xTickMinStep?: number;
}

/** One row of an interval chart: a point estimate with an optional interval, per category. */
export interface IntervalRow {
  /** The row's label on the category axis (categories keep the order of their first row). */
  readonly category: string;
  readonly value: number;
  readonly low?: number;
  readonly high?: number;
  /**
   * Several rows of one category with different `series` sit side by side, coloured and named in
   * the legend (e.g. "start" and "final"). Rows without it form one unnamed series, no legend.
   */
  readonly series?: string;
  /** Individual observations behind the estimate (e.g. one per seed), drawn as small ticks. */
  readonly samples?: readonly number[];
}

export interface IntervalChartOptions extends ChartFrame {
  /** The value axis (horizontal). */
  readonly valueLabel: string;
  /** The category axis (vertical); no title when omitted. */
  readonly categoryLabel?: string;
  readonly rows: readonly IntervalRow[];
  readonly valueDomain?: readonly [number, number];
  readonly valueFormat?: string;
}

const DEFAULT_WIDTH = 480;
const DEFAULT_HEIGHT = 300;
/** Longest label (pixels) before Vega shortens it with an ellipsis. */
const LABEL_LIMIT = 600;

const isNumber = (v: number | undefined): v is number => typeof v === "number" && Number.isFinite(v);

function title(options: ChartFrame) {
  return options.subtitle
    ? { text: options.title, subtitle: options.subtitle, anchor: "start" as const }
    : { text: options.title, anchor: "start" as const };
}

function withoutLegend<T extends { legend?: unknown }>(encoding: T): Omit<T, "legend"> {
  const { legend: _legend, ...rest } = encoding;
  return rest;
}

function palette(count: number): string {
  return count <= 10 ? "category10" : "tableau20";
}

/** The Vega-Lite spec of `lineChartSvg` (one coloured line per series, a band where intervals are given). */
export function lineChartSpec(options: LineChartOptions): TopLevelSpec {
  const names = options.series.map((s) => s.name);
  if (new Set(names).size !== names.length) {
    throw new Error(`lineChart: series names must be unique (got ${names.join(", ")})`);
  }
  const values = options.series.flatMap((s) =>
    s.points
      .filter((p) => isNumber(p.x) && isNumber(p.y))
      .map((p) => ({
        series: s.name,
        x: p.x,
        y: p.y,
        low: isNumber(p.low) ? p.low : null,
        high: isNumber(p.high) ? p.high : null,
      })),
  );
  const hasBands = values.some((v) => v.low !== null && v.high !== null);
  const color = {
    field: "series",
    type: "nominal" as const,
    title: null,
    scale: { domain: names, scheme: palette(names.length) },
    legend: {
      labelLimit: LABEL_LIMIT,
      orient: "bottom" as const,
      direction: "vertical" as const,
    },
  };
  // One legend, the lines': the band and point layers share the colour scale but not the legend
  // (a merged legend would draw its symbols with the bands' opacity).
  const colorNoLegend = { ...withoutLegend(color), legend: null };
  const x = {
    field: "x",
    type: "quantitative" as const,
    title: options.xLabel,
    scale: options.xDomain ? { domain: [...options.xDomain], nice: false } : { zero: false },
    axis: {
      ...(options.xFormat ? { format: options.xFormat } : {}),
      ...(options.xTickMinStep !== undefined ? { tickMinStep: options.xTickMinStep } : {}),
    },
  };
  const yScale = options.yDomain ? { domain: [...options.yDomain], nice: false } : { zero: false };
  const yAxis = options.yFormat ? { axis: { format: options.yFormat } } : {};
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: title(options),
    width: options.width ?? DEFAULT_WIDTH,
    height: options.height ?? DEFAULT_HEIGHT,
    data: { values },
    layer: [
      ...(hasBands
        ? [
            {
              name: "band",
              transform: [{ filter: "isValid(datum.low) && isValid(datum.high)" }],
              mark: { type: "area" as const, opacity: 0.18 },
              encoding: {
                x,
                y: {
                  field: "low",
                  type: "quantitative" as const,
                  title: options.yLabel,
                  scale: yScale,
                  ...yAxis,
                },
                y2: { field: "high" },
                color: colorNoLegend,
              },
            },
          ]
        : []),
      {
        name: "line",
        mark: { type: "line" as const, strokeWidth: 2 },
        encoding: {
          x,
          y: { field: "y", type: "quantitative" as const, title: options.yLabel, scale: yScale, ...yAxis },
          color,
        },
      },
      {
        name: "point",
        mark: { type: "point" as const, filled: true, size: 30 },
        encoding: {
          x,
          y: { field: "y", type: "quantitative" as const, title: options.yLabel, scale: yScale, ...yAxis },
          color: colorNoLegend,
        },
      },
    ],
    resolve: { legend: { color: "independent" } },
    config: { font: "sans-serif", axis: { labelLimit: LABEL_LIMIT } },
  } as TopLevelSpec;
}

/** The Vega-Lite spec of `intervalChartSvg` (categories down the side, values across). */
export function intervalChartSpec(options: IntervalChartOptions): TopLevelSpec {
  const categories = [...new Set(options.rows.map((r) => r.category))];
  const seriesNames = [...new Set(options.rows.map((r) => r.series ?? ""))];
  const named = seriesNames.some((s) => s !== "");
  const rows = options.rows
    .filter((r) => isNumber(r.value))
    .map((r) => ({
      category: r.category,
      series: r.series ?? "",
      value: r.value,
      low: isNumber(r.low) ? r.low : null,
      high: isNumber(r.high) ? r.high : null,
    }));
  const samples = options.rows.flatMap((r) =>
    (r.samples ?? [])
      .filter(isNumber)
      .map((value) => ({ category: r.category, series: r.series ?? "", value })),
  );
  const y = {
    field: "category",
    type: "nominal" as const,
    title: options.categoryLabel ?? null,
    sort: categories,
    axis: { labelLimit: LABEL_LIMIT },
  };
  const yOffset = named ? { yOffset: { field: "series", type: "nominal" as const, sort: seriesNames } } : {};
  const seriesColor = {
    field: "series",
    type: "nominal" as const,
    title: null,
    scale: { domain: seriesNames, scheme: palette(seriesNames.length) },
    legend: { orient: "bottom" as const, labelLimit: LABEL_LIMIT },
  };
  const color = named ? { color: seriesColor } : {};
  // Layers sharing the colour scale share its one legend: only the value layer configures it.
  const colorNoLegend = named ? { color: withoutLegend(seriesColor) } : {};
  const scale = options.valueDomain ? { domain: [...options.valueDomain], nice: false } : { zero: false };
  const axis = options.valueFormat ? { axis: { format: options.valueFormat } } : {};
  const x = (field: string) => ({
    field,
    type: "quantitative" as const,
    title: options.valueLabel,
    scale,
    ...axis,
  });
  const bandHeight = named ? 14 * seriesNames.length + 10 : 22;
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: title(options),
    width: options.width ?? DEFAULT_WIDTH,
    height: options.height ?? { step: bandHeight },
    layer: [
      {
        name: "interval",
        data: { values: rows },
        transform: [{ filter: "isValid(datum.low) && isValid(datum.high)" }],
        mark: { type: "rule" as const, strokeWidth: 2 },
        encoding: { y, ...yOffset, x: x("low"), x2: { field: "high" }, ...colorNoLegend },
      },
      ...(samples.length > 0
        ? [
            {
              name: "sample",
              data: { values: samples },
              mark: { type: "tick" as const, thickness: 1, opacity: 0.6, size: 10 },
              encoding: { y, ...yOffset, x: x("value"), ...colorNoLegend },
            },
          ]
        : []),
      {
        name: "value",
        data: { values: rows },
        mark: { type: "point" as const, filled: true, size: 60 },
        encoding: { y, ...yOffset, x: x("value"), ...color },
      },
    ],
    config: { font: "sans-serif", axis: { labelLimit: LABEL_LIMIT } },
  } as TopLevelSpec;
}

/** Renders any Vega-Lite spec to a standalone SVG document (a string starting with `<svg`). */
export async function vegaLiteSvg(spec: TopLevelSpec): Promise<string> {
  // Quiet: Vega-Lite's warnings (e.g. merged legends) would land on the caller's console; errors throw.
  const vega = compile(spec, { logger: logger(None) }).spec;
  const view = new View(parseVega(vega), { renderer: "none", logLevel: None });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/**
 * A line chart: one line per series (mean, say) with points at the data, and a translucent band
 * of the series' colour between `low` and `high` wherever both are given.
 */
export async function lineChartSvg(options: LineChartOptions): Promise<string> {
  return vegaLiteSvg(lineChartSpec(options));
}

/**
 * An interval ("forest") chart: per category a filled point at `value`, a horizontal rule from
 * `low` to `high`, and a faint tick per sample; several series per category sit side by side.
 */
export async function intervalChartSvg(options: IntervalChartOptions): Promise<string> {
  return vegaLiteSvg(intervalChartSpec(options));
}
