/**
 * Cheap policies for the coding teams' rewards: generic answers that collaborate on
 * paper but solve nothing, or test nothing, plus the canonical solution for reference. Each is
 * scored through the environment itself (`reset`, one `step`), under `paper` and `strict`.
 *
 * Used by strict-rewards.test.ts (a fixed subset of HumanEval, exact numbers) and by
 * reward-table.ts (all 164 problems: the table in docs/environments.md).
 */
import type { Task } from "@troupe/core";
import type { CodeRunner } from "@troupe/sandbox";
import {
  auxMainEnv,
  type CodingProblem,
  type CodingReward,
  type coderTesterEnv,
  type HarnessOptions,
} from "../../src/coding/index.ts";

const IDENTITY_HELPER = "def aux(x):\n    return x\n";
const fence = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

export interface AuxMainPolicy {
  readonly name: string;
  readonly helper: (p: CodingProblem) => string;
  readonly main: (p: CodingProblem) => string;
}

export const AUX_MAIN_POLICIES: readonly AuxMainPolicy[] = [
  {
    name: "correct main with `if False: _unused = aux(0)` first; identity helper",
    helper: () => IDENTITY_HELPER,
    main: (p) => `${p.prompt}    if False:\n        _unused = aux(0)\n${p.canonicalSolution}`,
  },
  {
    name: "identity helper; main `y = aux(args); return False`",
    helper: () => IDENTITY_HELPER,
    main: (p) => `def ${p.entryPoint}(*args):\n    y = aux(args)\n    return False\n`,
  },
  {
    name: "identity helper threaded through main's return (`r = solve(*args); return aux(r)`)",
    helper: () => IDENTITY_HELPER,
    main: (p) =>
      `${p.prompt}${p.canonicalSolution}\n\n_solve = ${p.entryPoint}\n\n` +
      `def ${p.entryPoint}(*args):\n    result = _solve(*args)\n    return aux(result)\n`,
  },
  {
    name: "canonical solution as main; identity helper, unused",
    helper: () => IDENTITY_HELPER,
    main: (p) => `${p.prompt}${p.canonicalSolution}`,
  },
  {
    name: "canonical solution as the helper `aux`; main `return aux(*args)`",
    helper: (p) =>
      `${p.prompt}${p.canonicalSolution}`.replace(new RegExp(`\\b${p.entryPoint}\\b`, "g"), "aux"),
    main: (p) => `def ${p.entryPoint}(*args):\n    return aux(*args)\n`,
  },
];

export interface TesterPolicy {
  readonly name: string;
  readonly tests: (p: CodingProblem) => string;
}

/**
 * The text of a call `name(...)` starting at `start` (the name's first character), through its
 * balanced closing parenthesis; parentheses inside string literals do not count. Undefined if
 * it does not close.
 */
function callAt(text: string, start: number, name: string): string | undefined {
  let depth = 0;
  let quote: string | null = null;
  for (let i = start + name.length; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return text.slice(start, i + 1);
    else if (c === "\n" && depth === 0) return undefined;
  }
  return undefined;
}

/**
 * The first example call of the entry point: in the prompt's docstring (after the `def` line), or
 * — when the docstring has none (22 of HumanEval's 164, e.g. "For lst = [1,2,3] the output should
 * be 14") — the hidden tests' first `candidate(...)` call, renamed.
 */
export function firstExample(p: CodingProblem): string {
  const e = p.entryPoint;
  const def = p.prompt.indexOf(`def ${e}(`);
  const docstring = p.prompt.slice(p.prompt.indexOf("\n", def) + 1);
  for (const m of docstring.matchAll(new RegExp(`\\b${e}\\(`, "g"))) {
    const call = callAt(docstring, m.index, e);
    if (call) return call;
  }
  for (const m of p.test.matchAll(/\bcandidate\(/g)) {
    const call = callAt(p.test, m.index, "candidate");
    if (call) return e + call.slice("candidate".length);
  }
  throw new Error(`firstExample: no example call of ${e} in ${p.taskId}`);
}

/** The hidden tests as a tester's asserts: the prelude, then `check`'s body with `candidate` renamed. */
export function hiddenTestsAsAsserts(p: CodingProblem): string {
  const lines = p.test.split("\n");
  const at = lines.findIndex((l) => /^def check\(candidate\):/.test(l));
  if (at < 0) throw new Error(`hiddenTestsAsAsserts: ${p.taskId} has no def check(candidate)`);
  const body = lines.slice(at + 1).filter((l) => l.trim() !== "");
  return [
    ...lines.slice(0, at),
    ...body.map((l) => l.replace(/^ {4}/, "").replace(/\bcandidate\b/g, p.entryPoint)),
  ].join("\n");
}

export const TESTER_POLICIES: readonly TesterPolicy[] = [
  {
    name: "tester: `assert f(<the first example>) is not None`",
    tests: (p) => `assert ${firstExample(p)} is not None\n`,
  },
  { name: "tester: the hidden tests themselves (canonical)", tests: hiddenTestsAsAsserts },
];

export interface PolicyScore {
  readonly policy: string;
  readonly reward: CodingReward;
  /** Per problem, in order. */
  readonly rewards: readonly number[];
  readonly mean: number;
  /** Problems with the maximum reward (4 for helper + main, 1 for the tester). */
  readonly full: number;
}

const task = (p: CodingProblem): Task<CodingProblem> => ({ id: p.taskId, split: "test", payload: p });

function score(policy: string, reward: CodingReward, rewards: number[], max: number): PolicyScore {
  const mean = rewards.reduce((a, b) => a + b, 0) / rewards.length;
  return { policy, reward, rewards, mean, full: rewards.filter((r) => r >= max - 1e-9).length };
}

/** The helper + main team reward of a policy on each problem (one step, as in training). */
export async function scoreAuxMain(
  runner: CodeRunner,
  problems: readonly CodingProblem[],
  policy: AuxMainPolicy,
  reward: CodingReward,
  harness: Partial<HarnessOptions> = {},
): Promise<PolicyScore> {
  const env = auxMainEnv({ runner, reward, harness });
  const rewards = await Promise.all(
    problems.map(async (p) => {
      const state = await env.reset(task(p), 0);
      const r = await env.step(state, { helper: fence(policy.helper(p)), main: fence(policy.main(p)) });
      return r.teamReward;
    }),
  );
  return score(policy.name, reward, rewards, 4);
}

/**
 * The tester's local reward of a policy on each problem (the tester acts first, alone). Pass one
 * `env` for several policies: it computes each problem's mutants once.
 */
export async function scoreTester(
  env: ReturnType<typeof coderTesterEnv>,
  reward: CodingReward,
  problems: readonly CodingProblem[],
  policy: TesterPolicy,
): Promise<PolicyScore> {
  const rewards = await Promise.all(
    problems.map(async (p) => {
      const state = await env.reset(task(p), 0);
      const r = await env.step(state, { tester: fence(policy.tests(p)) });
      return r.localRewards.tester ?? 0;
    }),
  );
  return score(policy.name, reward, rewards, 1);
}
