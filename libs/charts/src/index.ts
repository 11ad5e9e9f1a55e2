export * from "./charts.ts";
export * from "./html.ts";
