/**
 * Suites: how much evaluation a subject gets. `nightly` and `full` live in apps/eval/suites/ as
 * YAML; `--suite <path>` takes any file of the same shape (validated by `SuiteSchema`).
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { type Suite, SuiteSchema } from "./schema.ts";

export class EvalUsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EvalUsageError";
  }
}

const suitesDir = resolve(dirname(fileURLToPath(import.meta.url)), "../suites");

export function parseSuite(value: unknown, where: string): Suite {
  const parsed = SuiteSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new EvalUsageError(
      `${where}: ${issue.path.length ? `${issue.path.join(".")}: ` : ""}${issue.message}`,
    );
  }
  return parsed.data;
}

/** A suite by name (apps/eval/suites/<name>.yaml) or path (relative to `cwd`). */
export function loadSuite(nameOrPath: string, cwd = process.cwd()): Suite {
  const candidates = [join(suitesDir, `${nameOrPath}.yaml`), resolve(cwd, nameOrPath)];
  const file = candidates.find((p) => /\.ya?ml$|\.json$/.test(p) && existsSync(p));
  if (!file) {
    throw new EvalUsageError(
      `suite "${nameOrPath}" not found: expected nightly, full, held-out or a YAML file (looked at ${candidates.join(", ")})`,
    );
  }
  let value: unknown;
  try {
    value = parseYaml(readFileSync(file, "utf8"));
  } catch (error) {
    throw new EvalUsageError(`suite ${file}: not YAML (${(error as Error).message.split("\n")[0]})`);
  }
  return parseSuite(value, `suite ${file}`);
}

/** The k of pass@k a suite can estimate: those not above its samples per task. */
export function suiteKs(suite: Suite): number[] {
  return [...new Set(suite.k)].filter((k) => k <= suite.samples).sort((a, b) => a - b);
}
