import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { checkBoundaries, specifiers } from "./check.ts";

const here = dirname(fileURLToPath(import.meta.url));
const workspace = resolve(here, "../..");

describe("layer rules", () => {
  it("hold in this workspace", () => {
    expect(checkBoundaries(workspace)).toEqual([]);
  });

  it("an upward import fails the check, by package or by path", () => {
    const violations = checkBoundaries(workspace, {
      "libs/core/src/planted.ts": 'import { main } from "@troupe/trainer";\nexport const m = main;\n',
      "libs/engine-torch/src/planted.ts":
        'export const dir = new URL("../../../apps/engine-torch", import.meta.url);\n',
      "libs/rl/src/planted.ts": 'export { table } from "../../../apps/trainer/src/reports/reporter.ts";\n',
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
