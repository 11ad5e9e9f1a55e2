/**
 * The edges every trainer command shares: `--set` keys checked against the recipe schema with a
 * suggestion for a typo, the flags read before parsing, one `error:` line per user error, and
 * where a store's key is on disk.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStore } from "@troupe/storage/node";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  checkSetKeys,
  editDistance,
  errorLine,
  setArguments,
  storeLocation,
  suggestKey,
  wantsHelp,
} from "../../src/commands/cli.ts";
import { RecipeError } from "../../src/recipe.ts";

describe("--set keys", () => {
  it("editDistance is Levenshtein's: insertions, deletions and substitutions cost one each", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("abc", "")).toBe(3);
    expect(editDistance("trian", "train")).toBe(2);
    expect(editDistance("same", "same")).toBe(0);
  });

  it("suggests the closest recipe key, or the field of the same name one section off, or nothing", () => {
    expect(suggestKey("trian.steps")).toBe("train.steps");
    expect(suggestKey("optimizer.lrr")).toBe("optimizer.lr");
    expect(suggestKey("steps")).toBe("train.steps");
    expect(suggestKey("zzzzzz")).toBeUndefined();
    const schema = z.object({ alpha: z.object({ beta: z.number() }) });
    expect(suggestKey("alpha.bta", schema)).toBe("alpha.beta");
  });

  it("an unknown key, a value used as a section and a missing `=` each fail naming the flag", () => {
    expect(() => checkSetKeys(["train.steps=3", "environment.options.anything=1"])).not.toThrow();
    expect(() => checkSetKeys(["trian.steps=3"])).toThrow(
      new RecipeError("--set trian.steps: unknown key (did you mean train.steps?)"),
    );
    expect(() => checkSetKeys(["train.stepz=2"])).toThrow(
      '--set train.stepz: unknown key "stepz" in train (did you mean train.steps?)',
    );
    expect(() => checkSetKeys(["train.steps.x=1"])).toThrow(
      '--set train.steps.x: "train.steps" is a value, not a section',
    );
    expect(() => checkSetKeys(["nokey"])).toThrow('--set expects key=value, got "nokey"');
    expect(() => checkSetKeys(["=1"])).toThrow('--set expects key=value, got "=1"');
  });
});

describe("flags before parsing", () => {
  it("setArguments takes `--set k=v` and `--set=k=v` up to `--`", () => {
    expect(setArguments(["--recipe", "r", "--set", "a=1", "--set=b.c=2", "--", "--set", "d=3"])).toEqual([
      "a=1",
      "b.c=2",
    ]);
    expect(setArguments(["--set"])).toEqual([]);
  });

  it("wantsHelp sees --help or -h before `--` only", () => {
    expect(wantsHelp(["--recipe", "r", "-h"])).toBe(true);
    expect(wantsHelp(["--help"])).toBe(true);
    expect(wantsHelp(["--", "--help"])).toBe(false);
    expect(wantsHelp(["--recipe", "help"])).toBe(false);
  });
});

describe("errorLine", () => {
  it("joins a multi-line message into one `error:` line, trimmed, empty lines dropped", () => {
    expect(errorLine(new RecipeError("recipe: a: bad\n  b: worse\n\n"))).toBe(
      "error: recipe: a: bad; b: worse",
    );
    expect(errorLine("plain text")).toBe("error: plain text");
    expect(errorLine(new TypeError(""))).toBe("error: TypeError");
  });
});

describe("storeLocation", () => {
  const root = mkdtempSync(join(tmpdir(), "troupe-cli-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("a file store's key relative to the folder typed in, absolute outside it; another store's URI", () => {
    const store = new FileStore(join(root, "store"));
    expect(storeLocation(store, "runs/a/report.html", root)).toBe("store/runs/a/report.html");
    expect(storeLocation(store, "runs/a/report.html", join(root, "elsewhere"))).toBe(
      join(root, "store", "runs/a/report.html"),
    );
    const remote = { uri: "s3://bucket/prefix/" } as unknown as FileStore;
    expect(storeLocation(remote, "runs/a/report.html", root)).toBe("s3://bucket/prefix/runs/a/report.html");
  });
});
