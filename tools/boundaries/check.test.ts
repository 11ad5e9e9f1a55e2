import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkBoundaries, mirroredTest, specifiers, UNTESTED, untestedModules } from "./check.ts";

const here = dirname(fileURLToPath(import.meta.url));
const workspace = resolve(here, "../..");

describe("layer rules", () => {
  it("hold in this workspace", () => {
    expect(checkBoundaries(workspace)).toEqual([]);
  });

  it("an upward import fails the check, by package or by path", () => {
    const violations = checkBoundaries(workspace, {
      "libs/core/src/planted.ts": 'import { main } from "@troupe/trainer";\nexport const m = main;\n',
      "libs/core/test/planted.test.ts": "",
      "libs/engine-torch/src/planted.ts":
        'export const dir = new URL("../../../apps/engine-torch", import.meta.url);\n',
      "libs/engine-torch/test/planted.test.ts": "",
      "libs/rl/src/planted.ts": 'export { table } from "../../../apps/trainer/src/reports/reporter.ts";\n',
      "libs/rl/test/planted.test.ts": "",
      "libs/storage/src/planted.test.ts":
        'import { it } from "vitest";\nit("sits beside its module", () => {});\n',
    });
    expect(violations).toEqual([
      {
        file: "libs/core/src/planted.ts",
        message: expect.stringMatching(
          /core \(type:lib\) imports "@troupe\/trainer" .*\(type:app\): libs never depend on apps/,
        ),
      },
      {
        file: "libs/engine-torch/src/planted.ts",
        message: expect.stringMatching(
          /a path "\.\.\/\.\.\/\.\.\/apps\/engine-torch" reaches into apps\/engine-torch by a relative path/,
        ),
      },
      {
        file: "libs/rl/src/planted.ts",
        message: expect.stringMatching(
          /an import ".*" reaches into apps\/trainer by a relative path: use @troupe\/trainer/,
        ),
      },
      {
        file: "libs/storage/src/planted.test.ts",
        message: "a test under src/: tests live in libs/storage/test/ (test/planted.test.ts)",
      },
    ]);
  });

  it("every src module has its test at the mirrored path, or is listed with why; a stale entry fails too", () => {
    expect(mirroredTest("src/run/learner.ts")).toBe("test/run/learner.test.ts");
    expect(mirroredTest("src/view.tsx")).toBe("test/view.test.tsx");
    expect(mirroredTest("src/a.test.ts")).toBeUndefined();
    expect(mirroredTest("bench/solve.ts")).toBeUndefined();
    const planted = {
      "libs/storage/src/untested-module.ts": "export const one = 1;\n",
      "libs/storage/src/listed-module.ts": "export const two = 2;\n",
      "libs/storage/src/tested-module.ts": "export const three = 3;\n",
      "libs/storage/test/tested-module.test.ts": "",
    };
    const listed = {
      ...UNTESTED,
      "libs/storage/src/listed-module.ts": "planted: allowed",
      "libs/storage/src/tested-module.ts": "planted: has its test",
      "libs/storage/src/gone.ts": "planted: no such module",
    };
    expect(checkBoundaries(workspace, planted, listed)).toEqual([
      {
        file: "libs/storage/src/untested-module.ts",
        message: expect.stringMatching(
          /^no test at libs\/storage\/test\/untested-module\.test\.ts: tests mirror src\//,
        ),
      },
      {
        file: "libs/storage/src/tested-module.ts",
        message:
          "has its test now (libs/storage/test/tested-module.test.ts): delete its entry in tools/boundaries/untested.ts",
      },
      {
        file: "libs/storage/src/gone.ts",
        message: "listed in tools/boundaries/untested.ts but not there: delete the entry",
      },
    ]);
    // The list holds only modules without their test: each one is reported when it is not listed.
    expect(untestedModules(workspace).sort()).toEqual(Object.keys(UNTESTED).sort());
  });

  it("finds every kind of specifier", () => {
    const text = [
      'import a from "@troupe/a";',
      'import type { B } from "@troupe/b/sub";',
      'export * from "./c.ts";',
      'import "./side-effect.ts";',
      'const d = await import("@troupe/d");',
      'const e = require("../e");',
      'const f = new URL("../../f", import.meta.url);',
    ].join("\n");
    expect(
      specifiers(text)
        .map((s) => s.spec)
        .sort(),
    ).toEqual(
      ["../../f", "../e", "./c.ts", "./side-effect.ts", "@troupe/a", "@troupe/b/sub", "@troupe/d"].sort(),
    );
  });

  describe("the command", () => {
    const root = mkdtempSync(join(tmpdir(), "troupe-boundaries-"));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    const project = (folder: string, name: string, tag: string, deps: Record<string, string> = {}) => {
      mkdirSync(join(root, folder, "src"), { recursive: true });
      writeFileSync(
        join(root, folder, "package.json"),
        JSON.stringify({ name: `@troupe/${name}`, nx: { name, tags: [tag] }, dependencies: deps }),
      );
    };
    project("libs/low", "low", "type:lib");
    project("apps/top", "top", "type:app", { "@troupe/low": "*" });
    writeFileSync(join(root, "apps/top/src/main.ts"), 'import { x } from "@troupe/low";\n');
    mkdirSync(join(root, "apps/top/test"));
    writeFileSync(join(root, "apps/top/test/main.test.ts"), "");
    mkdirSync(join(root, "libs/low/test"));
    writeFileSync(join(root, "libs/low/test/index.test.ts"), "");
    const run = () =>
      spawnSync(process.execPath, ["--import", "tsx", join(here, "check.ts"), root], { encoding: "utf8" });

    it("exits 0 on a clean workspace and 1, naming the file, once a lib imports an app", {
      timeout: 60_000,
    }, () => {
      expect(run().status).toBe(0);
      writeFileSync(join(root, "libs/low/src/index.ts"), 'export { y } from "@troupe/top";\n');
      const failed = run();
      expect(failed.status).toBe(1);
      expect(failed.stderr).toMatch(/^libs\/low\/src\/index\.ts: low \(type:lib\) imports "@troupe\/top"/);
    });
  });
});
