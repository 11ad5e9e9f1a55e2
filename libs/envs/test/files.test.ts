/** Files an environment's options name: recorded by content hash, read back synchronously. */
import { describe, expect, it } from "vitest";
import {
  EnvironmentOptionsError,
  exported,
  FileRefSchema,
  registeredFile,
  registerFile,
} from "../src/files.ts";

const sha = (c: string) => c.repeat(64);

describe("file references", () => {
  it("a path and a sha256 of 64 lowercase hex digits, nothing else", () => {
    expect(FileRefSchema.parse({ path: "tasks.jsonl", sha256: sha("a") })).toEqual({
      path: "tasks.jsonl",
      sha256: sha("a"),
    });
    expect(FileRefSchema.safeParse({ path: "x", sha256: sha("A") }).success).toBe(false);
    expect(FileRefSchema.safeParse({ path: "", sha256: sha("a") }).success).toBe(false);
    expect(FileRefSchema.safeParse({ path: "x", sha256: sha("a"), extra: 1 }).success).toBe(false);
  });

  it("what a file held is found by its hash; an unloaded file is one line naming the key", () => {
    const rows = [{ q: 1 }];
    registerFile({ path: "a/tasks.jsonl", sha256: sha("1") }, { rows });
    // Another path with the same content is the same file.
    expect(registeredFile({ path: "b/copy.jsonl", sha256: sha("1") }, "k").rows).toBe(rows);
    const missing = () =>
      registeredFile({ path: "missing.jsonl", sha256: sha("2") }, "environment.options.file");
    expect(missing).toThrow(EnvironmentOptionsError);
    expect(missing).toThrow(
      expect.objectContaining({
        key: "environment.options.file",
        message:
          "environment.options.file: missing.jsonl was not loaded (the trainer, eval:run and api:serve load an environment's files before building it)",
      }),
    );
    // A path not yet resolved to a reference has not been loaded either.
    expect(() => registeredFile("raw/path.jsonl", "k")).toThrow("k: raw/path.jsonl was not loaded");
  });
});

describe("exported", () => {
  const isFunction = (v: unknown) => typeof v === "function";
  const f = () => 1;
  const g = () => 2;

  it("the named export, else the default, else the CommonJS interop's named or default export", () => {
    expect(exported({ reward: f, default: g }, "reward", isFunction)).toBe(f);
    expect(exported({ default: g }, "reward", isFunction)).toBe(g);
    expect(exported({ default: { reward: f } }, "reward", isFunction)).toBe(f);
    expect(exported({ default: { default: g } }, "reward", isFunction)).toBe(g);
  });

  it("the first candidate that fits; else the first there is (for the error), else undefined", () => {
    expect(exported({ reward: "not a function", default: g }, "reward", isFunction)).toBe(g);
    expect(exported({ reward: "not a function" }, "reward", isFunction)).toBe("not a function");
    expect(exported({}, "reward", isFunction)).toBeUndefined();
    expect(exported(null, "reward", isFunction)).toBeUndefined();
    expect(exported({ reward: null }, "reward", isFunction)).toBeUndefined();
  });
});
