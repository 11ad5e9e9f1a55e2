/** The papers' baselines around a text environment: one agent alone, naive concatenation, sequential, discussion. */
import { userObservation } from "@troupe/core";
import { describe, expect, test } from "vitest";
import {
  createEnvironment,
  renderAnswer,
  splitByRole,
  type WritingAnswer,
  withBaseline,
} from "../src/index.ts";

describe("baselines", () => {
  test("a single agent's answer split by role headers (none: the whole text for every role)", () => {
    expect(splitByRole("### concise\nshort\n### detailed\nlong text\n", ["concise", "detailed"])).toEqual({
      concise: "short",
      detailed: "long text",
    });
    expect(splitByRole("one answer", ["a", "b"])).toEqual({ a: "one answer", b: "one answer" });
  });

  const words = (n: number, w: string) => Array.from({ length: n }, (_, i) => `${w}${i}`).join(" ");

  test("each baseline's turns, what each agent sees, and the real reward at the end", async () => {
    const writing = createEnvironment("writing", {});
    const team = writing.team("per-role");
    const [task] = writing.generateTasks("test", 1, 0);
    const seen: Record<string, string[]> = {};
    for (const baseline of ["single", "naive-concat", "sequential", "discussion"] as const) {
      const { registered, team: t } = withBaseline(writing, team, baseline);
      expect(registered.env.name).toBe(`writing+${baseline}`);
      let state = await registered.env.reset(task!, 0);
      const log: string[] = [];
      for (let turn = 0; turn < t.maxTurns; turn++) {
        const stages = t.turnOrder === "parallel" ? [t.roles.map((r) => r.id)] : t.roles.map((r) => [r.id]);
        for (const stage of stages) {
          const actions = Object.fromEntries(
            stage.map((agent) => {
              const prompt = registered.env.observe(state, agent).messages.at(-1)!.content;
              log.push(
                `${agent}:${/teammate \(concise\) answered/.test(prompt) ? "sees-previous" : ""}${/first answers/.test(prompt) ? "sees-first" : ""}`,
              );
              const text =
                agent === "single"
                  ? `### concise\n${words(10, "c")}\n### detailed\n${words(30, "d")}`
                  : words(10, agent);
              return [agent, text];
            }),
          );
          const result = await registered.env.step(state, actions);
          state = result.state;
          if (result.done) log.push(`done:${result.teamReward > 0}`);
        }
      }
      seen[baseline] = log;
      const answer = renderAnswer(registered.env.name, state, []) as WritingAnswer;
      expect(answer.kind).toBe("writing");
    }
    expect(seen).toEqual({
      single: ["single:", "done:true"],
      "naive-concat": ["concise:", "detailed:", "done:true"],
      sequential: ["concise:", "detailed:sees-previous", "done:true"],
      discussion: ["concise:", "detailed:", "concise:sees-first", "detailed:sees-first", "done:true"],
    });
  });

  test("the single agent is told every role's task", () => {
    const writing = createEnvironment("writing", {});
    const { registered, team } = withBaseline(writing, writing.team("per-role"), "single");
    expect(team.roles).toEqual([{ id: "single", policy: "concise" }]);
    const state = {
      inner: {
        problem: { kind: "tldr", id: "p", title: "T", text: "post" },
        texts: null,
        reward: null,
        done: false,
      },
      drafts: {},
      first: null,
      done: false,
    };
    const prompt = registered.env.observe(state, "single").messages[0]!.content;
    expect(prompt).toMatch(/^You do this whole task alone/);
    expect(prompt).toContain("### concise\nWrite a concise TL;DR");
    expect(prompt).toContain("### detailed\nWrite a detailed summary");
    expect(userObservation("x").messages).toHaveLength(1);
  });
});
