import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkFunctionLengths, longFunctions, MAX_FUNCTION_LINES } from "./function-length.ts";

const workspace = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** A function of `n` lines in all: its first line, n - 2 statements, its closing brace. */
const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join("\n");

describe("function length", () => {
  it(`no shipped function in this workspace is over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(checkFunctionLengths(workspace)).toEqual([]);
  });

  it("finds every kind of function over the bound by its name and lines, nested ones too", () => {
    const text = [
      `export function declared() {\n${body(6)}\n}`, // lines 1-6
      `const arrow = () => {\n${body(5)}\n};`, // 7-11
      `register({ build(options) {\n${body(5)}\n} });`, // 12-16: a method of an object literal
      `class C {\n  method() {\n${body(4)}\n  }\n}`, // 17-22: method 18-21
      `run(function () {\n${body(5)}\n});`, // 23-27
      `function short() {\n${body(4)}\n}`, // 28-31: at the bound, not over it
    ].join("\n");
    expect(longFunctions("x.ts", text, 4)).toEqual([
      { file: "x.ts", name: "declared", startLine: 1, endLine: 6, lines: 6 },
      { file: "x.ts", name: "arrow", startLine: 7, endLine: 11, lines: 5 },
      { file: "x.ts", name: "build", startLine: 12, endLine: 16, lines: 5 },
      { file: "x.ts", name: "(argument of run)", startLine: 23, endLine: 27, lines: 5 },
    ]);
  });

  it("counts a factory with everything it closes over", () => {
    const text = `function outer() {\n  const inner = () => {\n${body(3)}\n  };\n}`; // outer 1-5, inner 2-4
    expect(longFunctions("y.ts", text, 4).map((f) => [f.name, f.lines])).toEqual([["outer", 5]]);
  });
});
