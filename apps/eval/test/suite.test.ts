/** Suites: the shipped ones by name, any YAML file of the same shape by path, one line for anything wrong. */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { EvalUsageError, loadSuite, parseSuite, suiteKs } from "../src/suite.ts";
import { tempDir } from "./fixtures.ts";

const tmp = tempDir("troupe-eval-suite-");
afterAll(() => tmp.cleanup());

describe("suites", () => {
  it("loads the shipped suites by name", () => {
    expect(loadSuite("nightly")).toEqual({
      name: "nightly",
      tasks: 32,
      samples: 10,
      temperature: 1,
      topP: 1,
      k: [1, 3, 5, 10],
      seed: 0,
    });
    expect(loadSuite("full").tasks).toBe(500);
    expect(loadSuite("held-out").name).toBe("held-out");
  });

  it("loads a YAML file by path (relative to cwd), filling the defaults", () => {
    writeFileSync(join(tmp.root, "mine.yaml"), "name: mine\ntasks: 4\nsamples: 2\ntemperature: 0.5\n");
    expect(loadSuite("mine.yaml", tmp.root)).toEqual({
      name: "mine",
      tasks: 4,
      samples: 2,
      temperature: 0.5,
      topP: 1,
      k: [1, 3, 5, 10],
      seed: 0,
    });
  });

  it("one EvalUsageError line: a missing suite, a file that is not YAML, a field out of range", () => {
    expect(() => loadSuite("nope", tmp.root)).toThrow(
      new RegExp(
        `^suite "nope" not found: expected nightly, full, held-out or a YAML file \\(looked at .*nope\\.yaml, ${tmp.root}/nope\\)$`,
      ),
    );
    writeFileSync(join(tmp.root, "bad.yaml"), "name: [unclosed\n");
    expect(() => loadSuite("bad.yaml", tmp.root)).toThrow(/^suite .*bad\.yaml: not YAML \(/);
    writeFileSync(join(tmp.root, "zero.yaml"), "name: z\ntasks: 0\nsamples: 1\ntemperature: 1\n");
    expect(() => loadSuite("zero.yaml", tmp.root)).toThrow(/^suite .*zero\.yaml: tasks: /);
    expect(() => parseSuite({ name: "Bad Name", tasks: 1, samples: 1, temperature: 1 }, "s")).toThrow(
      new EvalUsageError("s: name: expected a name of a–z, 0–9, '.', '_', '-'"),
    );
    expect(() => parseSuite({ name: "x", tasks: 1, samples: 1, temperature: 1, extra: 1 }, "s")).toThrow(
      /^s: /,
    );
  });

  it("suiteKs: the distinct k not above the samples per task, ascending", () => {
    const suite = parseSuite({ name: "x", tasks: 1, samples: 5, temperature: 1, k: [10, 1, 5, 3, 1] }, "s");
    expect(suiteKs(suite)).toEqual([1, 3, 5]);
  });
});
