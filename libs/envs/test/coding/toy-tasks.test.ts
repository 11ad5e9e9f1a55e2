/**
 * The `toy` split of `coding`: deterministic, train and test disjoint, every task two steps, every
 * reference (whole, helper + main, the tester's asserts) right in Python, and each team's
 * demonstrations paid in full by the `strict` rewards through the environment's own path.
 */
import type { Task } from "@troupe/core";
import { createSandbox } from "@troupe/sandbox";
import { describe, expect, test } from "vitest";
import {
  AUX_MAIN_REWARD_TIERS,
  allToyProblems,
  createEnvironment,
  type ToyProblem,
  toyProblems,
  toySplitOf,
} from "../../src/index.ts";

const sandbox = await createSandbox();

const byId = (id: string) => allToyProblems().find((p) => p.taskId === id)!;

describe("toy problems", () => {
  test("known tasks, exactly", () => {
    const p = byId("Toy/list:gt3|sum");
    expect(p.prompt).toBe('def f(xs):\n    """keep x>3, then sum"""\n');
    expect(p.toy.whole).toBe("def f(xs):\n    return sum([x for x in xs if x>3])");
    expect(p.toy.aux).toBe("def aux(xs):\n    return [x for x in xs if x>3]");
    expect(p.toy.main).toBe("def f(xs):\n    return sum(aux(xs))");
    expect(p.canonicalSolution).toBe("    return sum([x for x in xs if x>3])\n");
    const q = byId("Toy/str:appa|upper");
    expect(q.toy.whole).toBe("def f(s):\n    return (s+'a').upper()");
    expect(q.toy.main).toBe("def f(s):\n    return aux(s).upper()");
    const r = byId("Toy/int:add3|mul2");
    expect(r.toy.whole).toBe("def f(n):\n    return (n+3)*2");
    expect(r.test).toMatch(/^def check\(candidate\):\n( {4}assert candidate\(\d+\) == \d+\n){4}$/);
    // A pair no input separates is left out: after `sort`, `reverse` then `sort` is `sort`.
    expect(allToyProblems().some((x) => x.taskId === "Toy/list:rev|sort")).toBe(false);
  });

  test("deterministic: generated twice, the same tasks, tests and order", () => {
    const a = allToyProblems();
    expect(allToyProblems()).toEqual(a);
    expect(a.length).toBeGreaterThan(3000);
  });

  test("train and test disjoint by the task's hash; the test split holds 500 held-out tasks", () => {
    const { train, test } = toyProblems();
    expect(train.length + test.length).toBe(allToyProblems().length);
    expect(test.length).toBeGreaterThanOrEqual(500);
    const trainIds = new Set(train.map((p) => p.taskId));
    const trainPrompts = new Set(train.map((p) => p.prompt));
    expect(test.filter((p) => trainIds.has(p.taskId) || trainPrompts.has(p.prompt))).toEqual([]);
    expect(new Set(test.map((p) => p.taskId)).size).toBe(test.length);
    expect(train.every((p) => toySplitOf(p) === "train") && test.every((p) => toySplitOf(p) === "test")).toBe(
      true,
    );
    // The environment serves them: the held-out set at seed 0 is the split's first tasks, train windows move with the seed.
    const env = createEnvironment("coding", {
      runner: sandbox,
      train: ["toy"],
      test: "toy",
      prompt: "brief",
    });
    expect(env.generateTasks("test", 500, 0).map((t) => t.id)).toEqual(
      test.slice(0, 500).map((p) => p.taskId),
    );
    const a = env.generateTasks("train", 16, 3).map((t) => t.id);
    expect(env.generateTasks("train", 16, 3).map((t) => t.id)).toEqual(a);
    expect(env.generateTasks("train", 16, 4).map((t) => t.id)).not.toEqual(a);
    expect(a.every((id) => trainIds.has(id))).toBe(true);
  });

  test("every task is two steps, each doing work: helper one, main the other", () => {
    for (const p of allToyProblems()) {
      expect(p.toy.steps.length, p.taskId).toBe(2);
      expect(p.prompt, p.taskId).toMatch(/^def f\((xs|s|n)\):\n {4}""".+, then .+"""\n$/);
      expect(p.toy.main, p.taskId).toContain("aux(");
      expect(p.toy.aux, p.taskId).toMatch(/^def aux\((xs|s|n)\):\n {4}return \S/);
      // The programs stay short: a byte-level model writes every character.
      expect(p.toy.whole.length, p.taskId).toBeLessThanOrEqual(70);
    }
  });

  test("every reference passes its own asserts in Python: the whole function, aux + main, the tester's asserts", async () => {
    const jobs = allToyProblems().map((p) => ({
      id: p.taskId,
      whole: `${p.prompt}${p.canonicalSolution}\n${p.test}\ncheck(f)\n`,
      parts: `${p.toy.aux}\n${p.toy.main}\n${p.test}\ncheck(f)\n`,
      // Each step alone must fail a test: both steps do work.
      onlyB: `def aux(v):\n    return v\n${p.toy.main}\n${p.test}\ncheck(f)\n`,
      tester: `${p.toy.whole}\n${p.toy.asserts}\n`,
    }));
    const program = [
      "import json",
      "jobs = json.load(open('jobs.json'))",
      "bad = []",
      "for j in jobs:",
      "    for part in ('whole', 'parts', 'tester'):",
      "        try:",
      "            exec(j[part], {})",
      "        except Exception as e:",
      "            bad.append(j['id'] + ' ' + part + ': ' + repr(e))",
      "    try:",
      "        exec(j['onlyB'], {})",
      "        bad.append(j['id'] + ' passes without its first step')",
      "    except AssertionError:",
      "        pass",
      "print(json.dumps({'n': len(jobs), 'bad': bad}))",
    ].join("\n");
    const run = await sandbox.run({
      language: "python",
      code: program,
      files: { "jobs.json": JSON.stringify(jobs) },
      limits: { wallMs: 60_000, cpuSeconds: 60 },
    });
    expect(run.status, run.stderr).toBe("ok");
    expect(JSON.parse(run.stdout)).toEqual({ n: jobs.length, bad: [] });
  }, 120_000);
});

/** The demonstrations of `roles` played through the environment on the first `n` held-out tasks. */
async function playDemos(roles: "helper-main" | "coder-tester" | "single", n: number) {
  const built = createEnvironment("coding", {
    runner: sandbox,
    roles,
    maxTurns: 1,
    train: ["toy"],
    test: "toy",
    prompt: "brief",
  });
  const team = built.team("per-role");
  const tasks = built.generateTasks("test", n, 0);
  return Promise.all(
    tasks.map(async (task) => {
      let state = await built.env.reset(task, 0);
      const rewards: { team: number; local: Record<string, number> }[] = [];
      let success: boolean | undefined;
      // The team's stages in order (coder + tester: the tester first, then the coder reading its asserts).
      const stages =
        team.turnOrder === "parallel" ? [team.roles.map((r) => r.id)] : team.roles.map((r) => [r.id]);
      for (const stage of stages) {
        const actions = Object.fromEntries(
          stage.map((agent) => [agent, built.demo!(task as Task<unknown>, state, agent)]),
        );
        const r = await built.env.step(state, actions);
        state = r.state;
        rewards.push({ team: r.teamReward, local: { ...r.localRewards } });
        success = r.success;
      }
      return {
        task: task.payload as ToyProblem,
        rewards,
        success,
        observation: built.env.observe(state, stages[0]![0]!),
      };
    }),
  );
}

describe("the demonstrations through the strict rewards", () => {
  test("helper + main: every tier paid, 4.0 (aux's result reaches main's answer, main is no wrapper)", async () => {
    const played = await playDemos("helper-main", 12);
    for (const p of played) {
      expect(p.success, p.task.taskId).toBe(true);
      expect(p.rewards[0]!.team, p.task.taskId).toBe(AUX_MAIN_REWARD_TIERS.max);
    }
  }, 120_000);

  test("single agent: success, the tiers a lone main can earn (0.6 + 0.5 + 1.0)", async () => {
    const played = await playDemos("single", 8);
    for (const p of played) {
      expect(p.success, p.task.taskId).toBe(true);
      expect(p.rewards[0]!.team, p.task.taskId).toBeCloseTo(2.1, 9);
    }
  }, 120_000);

  test("coder + tester: the coder succeeds, the tester's asserts hold on the reference and reject mutants", async () => {
    const played = await playDemos("coder-tester", 8);
    for (const p of played) {
      expect(p.success, p.task.taskId).toBe(true);
      expect(p.rewards.at(-1)!.team, p.task.taskId).toBe(1);
      const tester = p.rewards[0]!.local.tester!;
      expect(tester, p.task.taskId).toBeGreaterThan(0);
      expect(tester, p.task.taskId).toBeLessThanOrEqual(1);
    }
  }, 120_000);

  test("brief prompts: a role line and the problem, nothing else", async () => {
    const built = createEnvironment("coding", {
      runner: sandbox,
      train: ["toy"],
      test: "toy",
      prompt: "brief",
    });
    const task = built.generateTasks("test", 1, 0)[0]!;
    const state = await built.env.reset(task, 0);
    const p = task.payload as ToyProblem;
    expect(built.env.observe(state, "helper").messages.at(-1)!.content).toBe(
      `# helper: write aux\n${p.prompt}`,
    );
    expect(built.env.observe(state, "main").messages.at(-1)!.content).toBe(
      `# main: write f, may call aux\n${p.prompt}`,
    );
  });

  test("brief coder + tester prompts: the tester's asserts come before the problem the coder writes", async () => {
    const built = createEnvironment("coding", {
      runner: sandbox,
      roles: "coder-tester",
      train: ["toy"],
      test: "toy",
      prompt: "brief",
    });
    const task = built.generateTasks("test", 1, 0)[0]!;
    const p = task.payload as ToyProblem;
    const s0 = await built.env.reset(task, 0);
    expect(built.env.observe(s0, "tester").messages.at(-1)!.content).toBe(
      `# tester: write asserts on f\n${p.prompt}`,
    );
    const { state } = await built.env.step(s0, { tester: "assert f(1)==2" });
    expect(built.env.observe(state, "coder").messages.at(-1)!.content).toBe(
      `# coder: write f\n# tests:\nassert f(1)==2\n${p.prompt}`,
    );
  });
});
