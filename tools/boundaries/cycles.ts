/**
 * No import circles: no module of the workspace (libs/, apps/ and tools/, tests included) reaches
 * itself through a chain of imports. Every kind of import counts — type-only imports, re-exports,
 * dynamic imports, requires — and `@troupe/*` imports are followed into the package's source, so a
 * circle through two packages counts too. The graph is dependency-cruiser's, checked with its
 * `circular` rule; run by `nx run workspace-tools:test` (cycles.test.ts), so by `npm test` and CI.
 *
 *   node --import tsx tools/boundaries/cycles.ts [workspace root]   exits 1 and lists each circle
 *
 * A circle is broken by moving what both sides need (a type, a helper) into a module of its own.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseResult } from "dependency-cruiser";

const FOLDERS = ["libs", "apps", "tools"];
/** What is not the workspace's own source (as check.ts skips it), relative to the workspace root. */
const SKIP = "(^|/)(node_modules|dist|\\.venv|__pycache__|coverage|\\.[^/]+)/";

/**
 * Every import circle in the workspace, each as its files in import order starting from the
 * alphabetically first (`[a, b]`: a imports b, b imports a), sorted; empty when there is none.
 */
export async function findCycles(workspace: string): Promise<string[][]> {
  const folders = FOLDERS.filter((folder) => existsSync(join(workspace, folder)));
  if (folders.length === 0) return [];
  const { output } = await cruise(folders, {
    baseDir: workspace,
    validate: true,
    ruleSet: { forbidden: [{ name: "no-circular", severity: "error", from: {}, to: { circular: true } }] },
    exclude: { path: SKIP },
    doNotFollow: { path: "node_modules" },
    // Type-only imports are part of the graph: `import type` circles count.
    tsPreCompilationDeps: true,
    // `@troupe/*` packages resolve to their source, as tsconfig.base.json's customConditions say.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@troupe/source", "import", "require", "node", "default"],
    },
  });
  const result = output as ICruiseResult;
  const cycles = new Map<string, string[]>();
  for (const violation of result.summary.violations) {
    if (violation.cycle === undefined) continue;
    // dependency-cruiser names a circle once from each module on it that starts a violation.
    const files = [violation.from, ...violation.cycle.map((step) => step.name)];
    files.pop(); // the circle's last step is its first file again
    const start = files.indexOf([...files].sort()[0]!);
    const canonical = [...files.slice(start), ...files.slice(0, start)];
    cycles.set(canonical.join(" → "), canonical);
  }
  return [...cycles.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, files]) => files);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const workspace = resolve(process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), "../.."));
  const cycles = await findCycles(workspace);
  for (const files of cycles) process.stderr.write(`circle: ${[...files, files[0]].join(" → ")}\n`);
  process.stdout.write(`${cycles.length} import circle(s) in ${workspace}\n`);
  process.exitCode = cycles.length === 0 ? 0 : 1;
}
