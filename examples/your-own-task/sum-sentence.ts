/**
 * Sum-sentence: a two-agent task of one's own. A reader pulls the two numbers out of a sentence
 * ("Ann has 3 apples and gets 4 more."), a calculator adds what the reader wrote. The team is
 * rewarded when the sum is right; each agent for its own part.
 *
 * The file exports one environment entry. A recipe names it with `environment: {module:
 * ./sum-sentence.ts}`; the trainer, eval:run and api:serve load it (TypeScript or JavaScript) and
 * record its path and content hash. It imports only types from Troupe, and zod.
 */
import type { Environment, EnvironmentEntry, JointAction, StepResult, Task, Team } from "@troupe/envs";
import { z } from "zod";

/** What the agents read. */
const Inputs = z.object({ sentence: z.string().min(1).max(200) });
/** What only the reward reads: the two numbers of the sentence. A served sentence leaves them out. */
const Labels = z.object({ a: z.number().int(), b: z.number().int() });
const Payload = Inputs.extend({ a: Labels.shape.a.optional(), b: Labels.shape.b.optional() }).strict();
type Payload = z.infer<typeof Payload>;

interface State {
  readonly payload: Payload;
  /** The reader's two numbers, once it has spoken ("" if it wrote none). */
  readonly numbers: string | null;
  readonly sum: string | null;
  readonly done: boolean;
}

const Options = z
  .object({
    /** Largest number in a sentence. */
    max: z.number().int().min(1).max(99).default(9),
  })
  .strict();

const NAMES = ["Ann", "Bob", "Cem", "Dia", "Eli", "Fay"];
const THINGS = ["apples", "books", "coins", "stamps"];

/** The numbers in a text, in order. */
const numbersIn = (text: string) => (text.match(/-?\d+/g) ?? []).map(Number);

function sumSentenceEnv(): Environment<State, Payload> {
  return {
    name: "sum-sentence",
    agents: ["reader", "calculator"],
    rewardBounds: { team: [0, 1], local: [0, 1] },
    reset(task: Task<Payload>): State {
      const parsed = Payload.safeParse(task.payload);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        // "<env> task <id>: payload: <field>: <why>": the API answers 422 naming the field.
        throw new Error(
          `sum-sentence task ${task.id}: payload: ${issue.path.join(".") || "(root)"}: ${issue.message}`,
        );
      }
      return { payload: parsed.data, numbers: null, sum: null, done: false };
    },
    observe(state, agent) {
      const text =
        agent === "reader" ? `${state.payload.sentence}\nnumbers:` : `numbers: ${state.numbers ?? ""}\nsum:`;
      return { messages: [{ role: "user", content: text }] };
    },
    step(state, actions: JointAction): StepResult<State> {
      const { a, b } = state.payload;
      const labelled = a !== undefined && b !== undefined;
      if (actions.reader !== undefined) {
        const found = numbersIn(actions.reader).slice(0, 2);
        const right = labelled && found.length === 2 && found[0] === a && found[1] === b;
        return {
          state: { ...state, numbers: found.join(" ") },
          teamReward: 0,
          localRewards: { reader: right ? 1 : 0 },
          done: false,
        };
      }
      const said = numbersIn(actions.calculator ?? "")[0];
      const read = numbersIn(state.numbers ?? "");
      // The calculator is paid for adding what it read, right or wrong; the team for the true sum.
      const added = read.length === 2 && said === read[0]! + read[1]!;
      const solved = labelled && said === a + b;
      return {
        state: { ...state, sum: said === undefined ? "" : String(said), done: true },
        teamReward: solved ? 1 : 0,
        localRewards: { calculator: added ? 1 : 0 },
        done: true,
        // Without the labels (a served sentence) nobody can judge: the answer says solved: null.
        ...(labelled ? { success: solved } : {}),
      };
    },
  };
}

/** A task per index: the same (split, seed) gives the same sentences; train and test never share one. */
function generateTasks(max: number, split: string, count: number, seed: number): Task<Payload>[] {
  const tasks: Task<Payload>[] = [];
  for (let i = 0; tasks.length < count && i < 100_000; i++) {
    // A multiplicative hash of (seed, i): reproducible, no dependency.
    const x = (Math.imul(seed + 1, 2654435761) + Math.imul(i + 1, 40503)) >>> 0;
    const a = 1 + (x % max);
    const b = 1 + ((x >>> 8) % max);
    const n = (x >>> 16) % NAMES.length;
    const t = (x >>> 20) % THINGS.length;
    // A fifth of the sentences are held out, by their wording and numbers together: the splits
    // never share a sentence, and every sum occurs in both (with other names and things).
    const held = (a * 31 + b * 7 + n * 3 + t) % 5 === 0;
    if (held !== (split === "test")) continue;
    const sentence = `${NAMES[n]} has ${a} ${THINGS[t]} and gets ${b} more.`;
    tasks.push({
      id: `${split}-${seed}-${i}`,
      split: split === "test" ? "test" : "train",
      payload: { sentence, a, b },
    });
  }
  return tasks;
}

function team(specialisation: "shared" | "per-role"): Team {
  const roles = ["reader", "calculator"].map((id) => ({
    id,
    policy: specialisation === "shared" ? "shared" : id,
  }));
  return { name: `sum-sentence-${specialisation}`, roles, turnOrder: "sequential", maxTurns: 1 };
}

const entry: EnvironmentEntry<typeof Options> = {
  name: "sum-sentence",
  description: "a reader pulls two numbers out of a sentence, a calculator adds them",
  options: Options,
  payload: { inputs: Inputs, labels: Labels },
  build(options) {
    return {
      env: sumSentenceEnv() as Environment<unknown, unknown>,
      generateTasks: (split, count, seed) => generateTasks(options.max, split, count, seed),
      team,
      // The solver the warm start imitates: the reader writes the labels, the calculator adds
      // what the reader wrote. Without `demo` a recipe has no `sft` section and RL starts cold.
      demo(task, state, agent) {
        const p = task.payload as Payload;
        if (agent === "reader") return `${p.a} ${p.b}`;
        const read = numbersIn((state as State).numbers ?? "");
        return String(read.reduce((s, n) => s + n, 0));
      },
    };
  },
};

export default entry;
