/**
 * CoMLRL's tiered reward for the helper + main coding team (MAGRPO code generation,
 * OpenMLRL/LLM_Collab_Code_Generation `execution_reward_aux`). Tiers are checked in order; a
 * failed gate stops the count.
 *
 * | tier | check                                                              | reward            | gate             |
 * |------|--------------------------------------------------------------------|-------------------|------------------|
 * | 1    | helper defines `aux` with a `return <value>`                       | +0.4              | no (optional)    |
 * | 1    | main defines the entry point with a `return <value>`               | +0.6              | yes: else stop   |
 * | 2    | prompt + aux + main compiles (Python `compile`)                    | +0.5              | yes: else stop   |
 * | 3    | fraction of the problem's asserts passed                           | +1.0 × passed/all | no               |
 * | 3b   | at least one assert passed, `aux` is defined, and main calls `aux` | +0.5              | for 3c, 3d       |
 * | 3c   | … and main is not a trivial wrapper of `aux`                       | +1.0              |                  |
 * | 3d   | … and main throws away an `aux(...)` result (a bare call statement) | −0.5              |                  |
 *
 * Maximum 4.0, minimum 0. "Trivial wrapper": main's body (docstring and `pass` aside) is empty,
 * one `return <expr calling aux>`, or `v = aux(...)` then `return v`. These are judged with
 * Python's `ast` (CoMLRL uses regular expressions; `ast` gives the same answers on well-formed
 * code and no false matches inside strings or comments).
 *
 * That is the `paper` reward. It pays for collaboration that solves nothing: the 3b–3d gate is one
 * passing assert (a constant `False` passes an assert of 55 of HumanEval's 164 problems) and a call
 * to `aux` anywhere in main's text (`if False: aux(0)`, a result never used). The `strict` reward
 * (the environments' default) keeps tiers 1–3 and judges 3b and 3c by what runs
 * (`TestReport.calleeUse`, the harness's `dependence` question, asked only when every test passes):
 * - 3b needs every hidden test to pass (collaboration is paid for a solution, not for a try), and
 *   `aux`'s work to reach main's answer: in a counterfactual run, a fresh process identical to a
 *   control run but for `aux` returning a blank of its real result's type and shape (0, "", a list
 *   of blanks, …), main answers another value on at least one of the tests' calls; and `aux` to do
 *   work: it is called, it does not return one of its arguments on every call, and it does not
 *   return the same value on every call while the expected answers differ;
 * - 3c needs main's answer to differ from every answer `aux` gave in that call on at least one call
 *   (a wrapper is a wrapper whatever its text looks like).
 * 3d (a thrown-away `aux(...)` statement) stays a text rule, as in `paper`.
 */
import type { CodingReward } from "./feedback.ts";
import type { CalleeUse, FunctionReport, TestReport } from "./harness.ts";

export const AUX_MAIN_REWARD_TIERS = {
  auxDefined: 0.4,
  mainDefined: 0.6,
  syntax: 0.5,
  tests: 1.0,
  auxUsed: 0.5,
  notWrapper: 1.0,
  ignoredAuxResult: -0.5,
  max: 4.0,
} as const;

export interface AuxMainRewardBreakdown {
  readonly auxDefined: number;
  readonly mainDefined: number;
  readonly syntax: number;
  readonly tests: number;
  readonly auxUsed: number;
  readonly notWrapper: number;
  readonly ignoredAuxResult: number;
  readonly total: number;
  /** The tier whose gate failed, if any. */
  readonly stoppedAt?: "structure" | "syntax";
  /** `strict` only: why the collaboration tiers (3b–3d) were withheld from a team that calls `aux`. */
  readonly withheld?:
    | "not every test passes"
    | "aux's result does not reach main's return value"
    | `aux does no work (${NonNullable<CalleeUse["noWork"]>})`;
}

/** Every tier at 0: where `auxMainReward` starts adding. */
function unpaidTiers() {
  return {
    auxDefined: 0,
    mainDefined: 0,
    syntax: 0,
    tests: 0,
    auxUsed: 0,
    notWrapper: 0,
    ignoredAuxResult: 0,
  };
}

/** No tier paid: what a step that ran nothing (the `unscored` option) reports. */
export const NO_AUX_MAIN_REWARD: AuxMainRewardBreakdown = { ...unpaidTiers(), total: 0 };

/**
 * The reward from a harness report whose `functions` hold the `aux` query (label "aux") and the
 * main query (label "main", callee "aux"); `strict` also needs the run's `dependence` answer
 * (`calleeUse`, asked with `dependence: { callee: "aux" }`).
 */
export function auxMainReward(report: TestReport, reward: CodingReward): AuxMainRewardBreakdown {
  if (reward === "strict" && report.calleeUse === undefined)
    throw new Error('auxMainReward: the strict reward needs a run that asked dependence: { callee: "aux" }');
  const T = AUX_MAIN_REWARD_TIERS;
  const aux = findFunction(report, "aux");
  const main = findFunction(report, "main");
  const parts = unpaidTiers();
  let withheld: AuxMainRewardBreakdown["withheld"];
  const done = (stoppedAt?: AuxMainRewardBreakdown["stoppedAt"]): AuxMainRewardBreakdown => {
    const total = Object.values(parts).reduce((a, b) => a + b, 0);
    return { ...parts, total, ...(stoppedAt ? { stoppedAt } : {}), ...(withheld ? { withheld } : {}) };
  };
  if (aux.defined && aux.hasReturn) parts.auxDefined = T.auxDefined;
  const { stoppedAt, ...own } = ownTiers(report, main);
  Object.assign(parts, own);
  if (stoppedAt) return done(stoppedAt);
  if (report.passed > 0 && aux.defined && main.callsCallee) {
    const use = report.calleeUse;
    if (use !== undefined && reward === "strict") {
      if (report.passed < report.total || report.harnessError !== undefined)
        withheld = "not every test passes";
      else if (use.noWork !== undefined) withheld = `aux does no work (${use.noWork})`;
      else if (!use.matters) withheld = "aux's result does not reach main's return value";
      if (withheld) return done();
    }
    parts.auxUsed = T.auxUsed;
    const wrapper = use !== undefined && reward === "strict" ? use.wrapper : main.isWrapper;
    if (!wrapper) parts.notWrapper = T.notWrapper;
    if (main.ignoredCalleeCalls > 0) parts.ignoredAuxResult = T.ignoredAuxResult;
  }
  return done();
}

/**
 * Tiers 1 (main's own), 2 and 3 of one function: defined with a `return <value>` (a gate), the
 * program compiles (a gate), its share of the tests passed. What a function written alone earns.
 */
function ownTiers(
  report: TestReport,
  f: FunctionReport,
): { mainDefined: number; syntax: number; tests: number; stoppedAt?: "structure" | "syntax" } {
  const T = AUX_MAIN_REWARD_TIERS;
  if (!(f.defined && f.hasReturn)) return { mainDefined: 0, syntax: 0, tests: 0, stoppedAt: "structure" };
  if (!report.syntaxOk) return { mainDefined: T.mainDefined, syntax: 0, tests: 0, stoppedAt: "syntax" };
  const tests = report.total > 0 ? (T.tests * report.passed) / report.total : 0;
  return { mainDefined: T.mainDefined, syntax: T.syntax, tests };
}

/** The most a function written alone earns: tiers 1 (main's), 2 and 3. */
export const SOLO_TIERS_MAX =
  AUX_MAIN_REWARD_TIERS.mainDefined + AUX_MAIN_REWARD_TIERS.syntax + AUX_MAIN_REWARD_TIERS.tests;

/**
 * The single agent's tiers for the function of the query labelled `label` (defined with a return,
 * compiles, share of tests passed; `roles: single` is paid these), over their maximum: in [0, 1].
 */
export function soloTiersShare(report: TestReport, label: string): number {
  const { mainDefined, syntax, tests } = ownTiers(report, findFunction(report, label));
  return (mainDefined + syntax + tests) / SOLO_TIERS_MAX;
}

function findFunction(report: TestReport, label: string): FunctionReport {
  const f = report.functions.find((x) => x.label === label);
  // A run that produced no result at all (killed, output limit) has no analysis: nothing counts.
  if (!f && report.harnessError !== undefined) {
    return {
      label,
      name: label,
      defined: false,
      hasReturn: false,
      parses: false,
      callsCallee: false,
      isWrapper: false,
      ignoredCalleeCalls: 0,
    };
  }
  if (!f) throw new Error(`auxMainReward: the harness report has no function query labelled "${label}"`);
  return f;
}
