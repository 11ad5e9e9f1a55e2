import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { findCycles } from "./cycles.ts";

const here = dirname(fileURLToPath(import.meta.url));
const workspace = resolve(here, "../..");

describe("import circles", () => {
  it("there are none in this workspace", { timeout: 180_000 }, async () => {
    expect(await findCycles(workspace)).toEqual([]);
  });

  describe("a planted circle", () => {
    const root = mkdtempSync(join(tmpdir(), "troupe-cycles-"));
    afterAll(() => rmSync(root, { recursive: true, force: true }));
    const write = (file: string, text: string) => {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      writeFileSync(join(root, file), text);
    };
    write("libs/low/src/a.ts", 'import { b } from "./b.ts";\nexport const a = () => b;\n');
    write("libs/low/src/b.ts", "export const b = 1;\n");
    write("apps/top/src/main.ts", 'import { a } from "../../../libs/low/src/a.ts";\nexport const m = a;\n');
    // Skipped like check.ts skips them: not the workspace's own source.
    write("libs/low/node_modules/x/index.ts", 'import "./index.ts";\n');
    const run = () =>
      spawnSync(process.execPath, ["--import", "tsx", join(here, "cycles.ts"), root], { encoding: "utf8" });

    it("is found, type-only or not, and the command exits 1 naming it", { timeout: 120_000 }, async () => {
      expect(await findCycles(root)).toEqual([]);
      expect(run().status).toBe(0);

      // b imports a back, and c and d close a circle with type-only imports alone.
      write(
        "libs/low/src/b.ts",
        'import { a } from "./a.ts";\nexport const b = 1;\nexport const again = () => a;\n',
      );
      write("apps/top/src/c.ts", 'import type { D } from "./d.ts";\nexport interface C { d?: D }\n');
      write("apps/top/src/d.ts", 'import type { C } from "./c.ts";\nexport interface D { c?: C }\n');
      expect(await findCycles(root)).toEqual([
        ["apps/top/src/c.ts", "apps/top/src/d.ts"],
        ["libs/low/src/a.ts", "libs/low/src/b.ts"],
      ]);
      const failed = run();
      expect(failed.status).toBe(1);
      expect(failed.stderr).toContain("circle: libs/low/src/a.ts → libs/low/src/b.ts → libs/low/src/a.ts");
      expect(failed.stdout).toMatch(/^2 import circle\(s\)/);
    });

    it("is found through @troupe/* packages, which resolve to their source", {
      timeout: 120_000,
    }, async () => {
      const pkg = (name: string, imports: string) => {
        write(
          `libs/${name}/package.json`,
          JSON.stringify({
            name: `@troupe/${name}`,
            type: "module",
            exports: { ".": { "@troupe/source": "./src/index.ts", default: "./dist/index.js" } },
          }),
        );
        write(
          `libs/${name}/src/index.ts`,
          `import { x } from "@troupe/${imports}";\nexport const ${name} = x;\n`,
        );
        mkdirSync(join(root, "node_modules/@troupe"), { recursive: true });
        symlinkSync(join(root, "libs", name), join(root, "node_modules/@troupe", name));
      };
      pkg("p", "q");
      pkg("q", "p");
      expect(await findCycles(root)).toContainEqual(["libs/p/src/index.ts", "libs/q/src/index.ts"]);
    });
  });
});
