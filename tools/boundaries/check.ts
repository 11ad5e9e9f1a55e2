/**
 * The layer rules, checked from the source (run by `nx run workspace-tools:test`, so by `npm test`
 * and CI):
 *
 *  - every project has one `type:lib` or `type:app` tag (package.json `nx.tags`);
 *  - a `type:lib` depends only on `type:lib` projects: through `@troupe/*` imports (static, dynamic,
 *    `export … from`, require) and package.json dependencies;
 *  - no shipped file (outside test/ and bench/, not a test or a config) reaches into another
 *    project by a relative path — neither an import nor a path built from `import.meta.url`
 *    (`new URL("../../../apps/x", import.meta.url)`): other projects are used through their
 *    package, and a library is told where an app is (configuration), never finds it by where it
 *    lies. Tests may wire in another project's fixtures or a real app (an integration test);
 *  - tests live in the project's test/ folder, mirroring src/ (`src/a/b.ts` → `test/a/b.test.ts`):
 *    src/ holds only what the project ships, and every test is found in one place;
 *  - every src module has its test file at the mirrored path, one obvious test file per module,
 *    unless untested.ts lists it with why (re-exports and type declarations). An entry there that
 *    no longer applies is a violation too.
 *
 *   node --import tsx tools/boundaries/check.ts [workspace root]   exits 1 and lists violations
 *   node --import tsx tools/boundaries/check.ts --untested         lists every module without its test
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { NEEDS_NO_TEST } from "./untested.ts";

export interface Project {
  readonly name: string;
  /** The npm package name (`@troupe/core`). */
  readonly packageName: string;
  /** Folder relative to the workspace root, "/"-separated (`libs/core`). */
  readonly root: string;
  readonly tags: readonly string[];
  readonly dependencies: readonly string[];
}

export interface Violation {
  /** File (or package.json) relative to the workspace root. */
  readonly file: string;
  readonly message: string;
}

const PROJECT_FOLDERS = ["libs", "apps"];
const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;
const SKIP = new Set(["node_modules", "dist", ".venv", "__pycache__", "coverage"]);

const posix = (path: string) => path.split(sep).join("/");

/** What a project ships: not its tests, benchmarks or tool configs. */
const shipped = (fileInProject: string) =>
  !/(^|\/)(test|tests|bench)\//.test(fileInProject) &&
  !/\.(test|bench|config)\.[cm]?[jt]sx?$/.test(fileInProject);

export function readProjects(workspace: string): Project[] {
  const projects: Project[] = [];
  for (const folder of PROJECT_FOLDERS) {
    const dir = join(workspace, folder);
    if (!existsSync(dir)) continue;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const manifest = join(dir, entry.name, "package.json");
      if (!entry.isDirectory() || !existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, "utf8")) as {
        name: string;
        nx?: { name?: string; tags?: string[] };
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      projects.push({
        name: pkg.nx?.name ?? pkg.name,
        packageName: pkg.name,
        root: `${folder}/${entry.name}`,
        tags: pkg.nx?.tags ?? [],
        dependencies: Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }),
      });
    }
  }
  return projects;
}

/** The source files below `dir` (not declarations; dependency, build and hidden folders skipped). */
export function* sourceFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name) || entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (SOURCE.test(entry.name) && !entry.name.endsWith(".d.ts")) yield path;
  }
}

/** Module specifiers a file names: imports, re-exports, dynamic imports, requires, `new URL(…, import.meta.url)`. */
export function specifiers(text: string): { spec: string; kind: "import" | "url" }[] {
  const out: { spec: string; kind: "import" | "url" }[] = [];
  const patterns: [RegExp, "import" | "url"][] = [
    [/(?:^|[\s;}])(?:import|export)\s[^'"`;]*?\sfrom\s*["']([^"']+)["']/g, "import"],
    [/(?:^|[\s;}])import\s*["']([^"']+)["']/g, "import"],
    [/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g, "import"],
    [/\brequire\s*\(\s*["']([^"']+)["']\s*\)/g, "import"],
    [/\bnew\s+URL\s*\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url\s*\)/g, "url"],
  ];
  for (const [pattern, kind] of patterns) {
    for (const match of text.matchAll(pattern)) out.push({ spec: match[1]!, kind });
  }
  return out;
}

/** The modules allowed to have no mirrored test (workspace-relative path → why). */
export const UNTESTED: Readonly<Record<string, string>> = NEEDS_NO_TEST;

/** The test file mirroring a module (`src/a/b.ts` → `test/a/b.test.ts`); undefined outside src/ or for a test. */
export function mirroredTest(inProject: string): string | undefined {
  const match = /^src\/(.+)\.([cm]?[jt]sx?)$/.exec(inProject);
  if (match === null || /\.test$/.test(match[1]!)) return undefined;
  return `test/${match[1]}.test.${match[2]}`;
}

const typeOf = (p: Project) => p.tags.find((t) => t === "type:lib" || t === "type:app");

/**
 * The violations in a workspace. `plant` adds files (workspace-relative path → text) as if they
 * were there: how the test shows that an upward import fails the check.
 */
export function checkBoundaries(
  workspace: string,
  plant: Readonly<Record<string, string>> = {},
  untested: Readonly<Record<string, string>> = UNTESTED,
): Violation[] {
  const projects = readProjects(workspace);
  const planted = new Map(Object.entries(plant).map(([file, text]) => [resolve(workspace, file), text]));
  const byPackage = new Map(projects.map((p) => [p.packageName, p]));
  const violations: Violation[] = [];
  const exists = (file: string) => planted.has(resolve(workspace, file)) || existsSync(join(workspace, file));
  const dependsOn = (from: Project, to: Project, file: string, how: string) => {
    if (typeOf(from) === "type:lib" && typeOf(to) !== "type:lib") {
      violations.push({
        file,
        message: `${from.name} (type:lib) ${how} ${to.packageName} (${typeOf(to) ?? "untagged"}): libs never depend on apps`,
      });
    }
  };

  for (const project of projects) {
    const manifest = `${project.root}/package.json`;
    const types = project.tags.filter((t) => t === "type:lib" || t === "type:app");
    if (types.length !== 1) {
      violations.push({
        file: manifest,
        message: `${project.name}: needs exactly one of the tags type:lib, type:app`,
      });
    } else if (types[0] !== (project.root.startsWith("libs/") ? "type:lib" : "type:app")) {
      violations.push({
        file: manifest,
        message: `${project.name}: tagged ${types[0]} but lives in ${project.root}`,
      });
    }
    for (const dep of project.dependencies) {
      const target = byPackage.get(dep);
      if (target) dependsOn(project, target, manifest, "lists");
    }

    const projectDir = join(workspace, project.root);
    const files = new Set([
      ...sourceFiles(projectDir),
      ...[...planted.keys()].filter((p) => p.startsWith(`${projectDir}${sep}`)),
    ]);
    for (const path of files) {
      const file = posix(relative(workspace, path));
      const inProject = file.slice(project.root.length + 1);
      if (/^src\/.*\.test\.[cm]?[jt]sx?$/.test(inProject)) {
        violations.push({
          file,
          message: `a test under src/: tests live in ${project.root}/test/ (${inProject.replace(/^src\//, "test/")})`,
        });
      }
      const test = mirroredTest(inProject);
      if (test !== undefined && !exists(`${project.root}/${test}`) && untested[file] === undefined) {
        violations.push({
          file,
          message: `no test at ${project.root}/${test}: tests mirror src/, one file per module (a module without logic is listed in tools/boundaries/untested.ts)`,
        });
      }
      for (const { spec, kind } of specifiers(planted.get(path) ?? readFileSync(path, "utf8"))) {
        if (spec.startsWith("@troupe/")) {
          const name = spec.split("/").slice(0, 2).join("/");
          const target = byPackage.get(name);
          if (target && target !== project) dependsOn(project, target, file, `imports "${spec}" of`);
          continue;
        }
        if (!spec.startsWith(".") || !shipped(inProject)) continue;
        const target = posix(relative(workspace, resolve(dirname(path), spec)));
        const inside = target === project.root || target.startsWith(`${project.root}/`);
        const other = projects.find((p) => target === p.root || target.startsWith(`${p.root}/`));
        if (!inside && (other !== undefined || PROJECT_FOLDERS.some((f) => target.startsWith(`${f}/`)))) {
          violations.push({
            file,
            message:
              `${kind === "url" ? "a path" : "an import"} "${spec}" reaches into ${other?.root ?? target} by a relative path` +
              (other ? `: use ${other.packageName}, or pass the location in (configuration)` : ""),
          });
        }
      }
    }
  }
  for (const file of Object.keys(untested)) {
    const project = projects.find((p) => file.startsWith(`${p.root}/`));
    if (project === undefined) continue; // another workspace's entry
    const test = mirroredTest(file.slice(project.root.length + 1));
    if (!exists(file)) {
      violations.push({
        file,
        message: "listed in tools/boundaries/untested.ts but not there: delete the entry",
      });
    } else if (test !== undefined && exists(`${project.root}/${test}`)) {
      violations.push({
        file,
        message: `has its test now (${project.root}/${test}): delete its entry in tools/boundaries/untested.ts`,
      });
    }
  }
  return violations;
}

/** Every src module of the workspace without a test at its mirrored path, listed or not. */
export function untestedModules(workspace: string): string[] {
  return checkBoundaries(workspace, {}, {})
    .filter((v) => v.message.startsWith("no test at "))
    .map((v) => v.file);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const listUntested = args.includes("--untested");
  const root = args.find((a) => !a.startsWith("--"));
  const workspace = resolve(root ?? join(dirname(fileURLToPath(import.meta.url)), "../.."));
  if (listUntested) {
    for (const file of untestedModules(workspace)) process.stdout.write(`${file}\n`);
    process.exit(0);
  }
  const violations = checkBoundaries(workspace);
  for (const v of violations) process.stderr.write(`${v.file}: ${v.message}\n`);
  process.stdout.write(`${violations.length} boundary violation(s) in ${workspace}\n`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
