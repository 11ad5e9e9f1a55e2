/**
 * No shipped function longer than `MAX_FUNCTION_LINES`: a function that long is several functions
 * with no names (a reader cannot find its parts in an outline, a stack trace or a grep). Checked
 * from the source with the TypeScript parser (run by `nx run workspace-tools:test`, so by
 * `npm test` and CI). A function's lines run from its first line to its last, nested functions
 * included (a factory is as long as everything it closes over).
 *
 *   node --import tsx tools/boundaries/function-length.ts [workspace root]   lists the long ones, exits 1 if any
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { readProjects, sourceFiles } from "./check.ts";

export const MAX_FUNCTION_LINES = 120;

export interface LongFunction {
  /** File relative to the workspace root, "/"-separated. */
  readonly file: string;
  readonly name: string;
  /** 1-based, inclusive. */
  readonly startLine: number;
  readonly endLine: number;
  readonly lines: number;
}

type FunctionNode =
  | ts.FunctionDeclaration
  | ts.FunctionExpression
  | ts.ArrowFunction
  | ts.MethodDeclaration
  | ts.ConstructorDeclaration
  | ts.GetAccessorDeclaration
  | ts.SetAccessorDeclaration;

/** The name a reader would search for: its own, or that of what it is assigned or passed to. */
function functionName(node: FunctionNode, source: ts.SourceFile): string {
  if (ts.isConstructorDeclaration(node)) return "constructor";
  if (node.name !== undefined) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(source);
  if (ts.isCallExpression(parent)) return `(argument of ${parent.expression.getText(source)})`;
  return "(anonymous)";
}

/** Every function in one file's text spanning more than `maxLines` lines. */
export function longFunctions(file: string, text: string, maxLines = MAX_FUNCTION_LINES): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body !== undefined) {
      const fn = node as FunctionNode;
      const startLine = source.getLineAndCharacterOfPosition(fn.getStart(source)).line + 1;
      const endLine = source.getLineAndCharacterOfPosition(fn.getEnd()).line + 1;
      const lines = endLine - startLine + 1;
      if (lines > maxLines) found.push({ file, name: functionName(fn, source), startLine, endLine, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The long functions of every project's shipped code (its `src/`), files in path order. */
export function checkFunctionLengths(workspace: string, maxLines = MAX_FUNCTION_LINES): LongFunction[] {
  const files = readProjects(workspace).flatMap((project) => {
    const src = join(workspace, project.root, "src");
    return existsSync(src) ? [...sourceFiles(src)] : [];
  });
  return files
    .sort()
    .flatMap((path) =>
      longFunctions(relative(workspace, path).split(sep).join("/"), readFileSync(path, "utf8"), maxLines),
    );
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const workspace = resolve(process.argv[2] ?? join(fileURLToPath(import.meta.url), "../../.."));
  const long = checkFunctionLengths(workspace);
  for (const f of long) {
    console.log(
      `${f.file}:${f.startLine}-${f.endLine}: ${f.name} is ${f.lines} lines (at most ${MAX_FUNCTION_LINES})`,
    );
  }
  console.log(`${long.length} functions over ${MAX_FUNCTION_LINES} lines`);
  process.exitCode = long.length > 0 ? 1 : 0;
}
