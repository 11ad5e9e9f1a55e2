export * from "./charts.ts";
