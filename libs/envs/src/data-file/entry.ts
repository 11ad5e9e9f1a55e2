/**
 * `data-file` in the registry: a task of one's own from a file of tasks and a reward function,
 * without writing an environment (TRL's "a dataset and a reward function").
 *
 * - `tasks`: a JSONL or Parquet file, one task per row (`test`: a second file of held-out tasks;
 *   without it, `testFraction` of the rows by a hash of their id).
 * - `inputs` / `labels`: the fields of a row the agents may read, and those only the reward reads
 *   (reference answers). A served task gives the inputs; without its labels it is played and not
 *   judged (`solved: null`).
 * - `prompts`: one template per role, in turn order; `{{field}}` is an input field, `{{<role>}}`
 *   that role's latest answer ("" before it spoke), `{{history}}` every answer so far as
 *   `role: text` lines, `{{turn}}` / `{{maxTurns}}` the turn (1-based) and the number of turns.
 * - `turnOrder` (`sequential`: each role reads the answers before it; `parallel`), `maxTurns`.
 * - `reward`: a module exporting `reward(task, actions)` → `{team, perRole?, success?, done?}`,
 *   called after every step with the task's fields and every action so far
 *   (`{role, turn, text}`, in order); `done: true` ends the episode before `maxTurns`.
 * - `demonstrations`: role → the field whose value is that role's answer, for the warm start.
 */
import type { AgentId, JointAction, StepResult, Task } from "@troupe/core";
import { stableHash } from "@troupe/core";
import { z } from "zod";
import { checkedEnvironment, datasetTasks, defineEnvironment, textTeam } from "../entry.ts";
import { EnvironmentOptionsError, exported, FileRefSchema, registeredFile } from "../files.ts";
import { textEnvironment } from "../text-env.ts";

const FileOption = z.union([z.string().min(1), FileRefSchema]);
const FieldName = z.string().regex(/^[A-Za-z_][\w-]*$/, "a field name is letters, digits, '_' or '-'");
const RoleName = z
  .string()
  .regex(/^[A-Za-z][\w-]{0,63}$/, "a role is a letter, then letters, digits, '_' or '-'");
/** Placeholders a template may use besides the input fields and the roles. */
const SPECIAL_PLACEHOLDERS = ["history", "turn", "maxTurns"] as const;

export const DataFileOptionsSchema = z
  .object({
    /** JSONL (.jsonl) or Parquet (.parquet) file of tasks, relative to the recipe. */
    tasks: FileOption,
    /** Held-out tasks; without it a hash split of `tasks`. */
    test: FileOption.optional(),
    /** Share of `tasks` held out when there is no `test` file. */
    testFraction: z.number().gt(0).lt(1).default(0.2),
    /** The field naming a row (absent: a hash of the row). */
    id: FieldName.default("id"),
    /** Fields the agents read (the templates' placeholders). */
    inputs: z.array(FieldName).min(1),
    /** Fields only the reward reads. */
    labels: z.array(FieldName).default([]),
    /** One prompt template per role, in turn order. */
    prompts: z
      .record(RoleName, z.string().min(1))
      .refine((p) => Object.keys(p).length >= 1, "at least one role"),
    turnOrder: z.enum(["sequential", "parallel"]).default("sequential"),
    maxTurns: z.number().int().min(1).max(16).default(1),
    /** Module exporting reward(task, actions) → {team, perRole?, success?, done?}, relative to the recipe. */
    reward: FileOption,
    /** Role → the row field that is its demonstration (for the warm start). */
    demonstrations: z.record(RoleName, FieldName).optional(),
  })
  .strict();
export type DataFileOptions = z.output<typeof DataFileOptionsSchema>;

/** One agent's answer as the reward and the templates see it. */
export interface DataFileAction {
  readonly role: AgentId;
  /** 1-based. */
  readonly turn: number;
  readonly text: string;
}

/** What a reward module's `reward` returns for one step. */
export interface DataFileReward {
  readonly team: number;
  readonly perRole?: Readonly<Record<AgentId, number>>;
  /** Whether the task is solved (absent: not judged this step). */
  readonly success?: boolean;
  /** End the episode now. */
  readonly done?: boolean;
}

export type RewardFunction = (
  task: Readonly<Record<string, unknown>>,
  actions: readonly DataFileAction[],
) => DataFileReward;

export interface DataFileState {
  readonly task: Readonly<Record<string, unknown>>;
  /** Whether the task carries its labels (then the reward judges it). */
  readonly labelled: boolean;
  /** Turns completed. */
  readonly turn: number;
  readonly actions: readonly DataFileAction[];
  readonly done: boolean;
}

const RewardResultSchema = z.strictObject({
  team: z.number().finite(),
  perRole: z.record(z.string(), z.number().finite()).optional(),
  success: z.boolean().optional(),
  done: z.boolean().optional(),
});

/** The `{{name}}` placeholders of a template. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(/\{\{\s*([\w-]+)\s*\}\}/g)].map((m) => m[1]!);
}

function checkTemplates(options: DataFileOptions, roles: readonly string[]): void {
  const known = new Set<string>([...options.inputs, ...roles, ...SPECIAL_PLACEHOLDERS]);
  for (const [role, template] of Object.entries(options.prompts)) {
    for (const name of placeholders(template)) {
      if (options.labels.includes(name)) {
        throw new EnvironmentOptionsError(
          `environment.options.prompts.${role}`,
          `{{${name}}} is a label: agents never read labels (inputs: ${options.inputs.join(", ")})`,
        );
      }
      if (!known.has(name)) {
        throw new EnvironmentOptionsError(
          `environment.options.prompts.${role}`,
          `unknown placeholder {{${name}}} (known: ${[...known].join(", ")})`,
        );
      }
    }
  }
}

/** The template with its placeholders filled in from the state. */
export function renderPrompt(
  template: string,
  state: Pick<DataFileState, "task" | "turn" | "actions">,
  maxTurns: number,
): string {
  return template.replace(/\{\{\s*([\w-]+)\s*\}\}/g, (_, name: string) => {
    if (name === "history") return state.actions.map((a) => `${a.role}: ${a.text}`).join("\n");
    if (name === "turn") return String(state.turn + 1);
    if (name === "maxTurns") return String(maxTurns);
    if (Object.hasOwn(state.task, name)) {
      const value = state.task[name];
      return typeof value === "string" ? value : JSON.stringify(value);
    }
    return state.actions.findLast((a) => a.role === name)?.text ?? "";
  });
}

/** The rows of a file option, each an object (one line naming the row otherwise). */
function rowsOf(ref: DataFileOptions["tasks"], key: string): Record<string, unknown>[] {
  const rows = registeredFile(ref, key).rows;
  if (rows === undefined) throw new EnvironmentOptionsError(key, "is not a data file (JSONL or Parquet)");
  return rows.map((row, i) => {
    if (typeof row !== "object" || row === null || Array.isArray(row))
      throw new EnvironmentOptionsError(key, `row ${i + 1} is not an object`);
    return row as Record<string, unknown>;
  });
}

function rewardOf(ref: DataFileOptions["reward"]): RewardFunction {
  const exports = registeredFile(ref, "environment.options.reward").exports;
  const reward = exported(exports, "reward", (v) => typeof v === "function");
  if (typeof reward !== "function") {
    throw new EnvironmentOptionsError(
      "environment.options.reward",
      `${typeof ref === "string" ? ref : ref.path} exports no function reward(task, actions)`,
    );
  }
  return reward as RewardFunction;
}

/** A row's id: its `options.id` field, or a hash of the row when it has none. */
function rowId(options: DataFileOptions, row: Record<string, unknown>): string {
  const id = row[options.id];
  return typeof id === "string" || typeof id === "number" ? String(id) : stableHash(row).slice(0, 16);
}

/** A row as a task's payload: its inputs and labels (and its id, and its demonstrations), nothing else. */
function payloadOf(
  options: DataFileOptions,
  row: Record<string, unknown>,
  i: number,
  key: string,
): Record<string, unknown> {
  const payload: Record<string, unknown> = { [options.id]: rowId(options, row) };
  for (const field of [...options.inputs, ...options.labels]) {
    if (row[field] === undefined)
      throw new EnvironmentOptionsError(key, `row ${i + 1} has no field "${field}"`);
    payload[field] = row[field];
  }
  for (const field of Object.values(options.demonstrations ?? {})) {
    if (row[field] !== undefined) payload[field] = row[field];
  }
  return payload;
}

/** The train and test payloads: the `test` file's rows, or the rows held out by a hash of their id. */
function dataSplits(options: DataFileOptions): {
  train: Record<string, unknown>[];
  test: Record<string, unknown>[];
} {
  const all = rowsOf(options.tasks, "environment.options.tasks").map((row, i) =>
    payloadOf(options, row, i, "environment.options.tasks"),
  );
  if (options.test !== undefined) {
    const test = rowsOf(options.test, "environment.options.test").map((row, i) =>
      payloadOf(options, row, i, "environment.options.test"),
    );
    return { train: all, test };
  }
  // A row's split is a hash of its id: adding rows never moves one between train and test.
  const held = (p: Record<string, unknown>) =>
    Number.parseInt(stableHash(["data-file-split", p[options.id]]).slice(0, 8), 16) / 2 ** 32 <
    options.testFraction;
  return { train: all.filter((p) => !held(p)), test: all.filter(held) };
}

/** The payload's schemas: its inputs, its labels, and the whole payload (labels optional: a served task has none). */
function payloadSchemas(options: DataFileOptions) {
  const field = z.custom<unknown>((value) => value !== undefined, "missing (an input of every task)");
  const inputs = z.object(Object.fromEntries(options.inputs.map((f) => [f, field])));
  const labels = z.object(Object.fromEntries(options.labels.map((f) => [f, field])));
  const demoFields = Object.fromEntries(
    Object.values(options.demonstrations ?? {}).map((f) => [f, z.json().optional()]),
  );
  const payload = inputs
    .extend(labels.partial().shape)
    .extend(demoFields)
    .extend({ [options.id]: z.union([z.string(), z.number()]).optional() })
    .strict();
  return { inputs, labels, payload };
}

export const dataFileEntry = defineEnvironment({
  description: "tasks from a JSONL or Parquet file, a prompt template per role and a reward module",
  options: DataFileOptionsSchema,
  files: { tasks: "data", test: "data", reward: "module" },
  build(options) {
    const roles = Object.keys(options.prompts);
    checkTemplates(options, roles);
    const reward = rewardOf(options.reward);
    // Read now: a row without a field fails when the environment is built, naming the row.
    const parts = dataSplits(options);
    const { inputs, labels, payload } = payloadSchemas(options);

    const env = textEnvironment<DataFileState, Record<string, unknown>>({
      name: "data-file",
      agents: roles,
      rewardBounds: { team: [-Infinity, Infinity], local: [-Infinity, Infinity] },
      reset: (task: Task<Record<string, unknown>>) => ({
        task: task.payload,
        labelled: options.labels.every((f) => task.payload[f] !== undefined),
        turn: 0,
        actions: [],
        done: false,
      }),
      prompt: (state, agent) => renderPrompt(options.prompts[agent]!, state, options.maxTurns),
      step(state, joint: JointAction): StepResult<DataFileState> {
        const acted = roles.filter((r) => joint[r] !== undefined);
        const actions = [
          ...state.actions,
          ...acted.map((role) => ({ role, turn: state.turn + 1, text: joint[role]! })),
        ];
        // A turn is every role acting once: it ends when the last role in turn order has acted.
        const turn = acted.includes(roles.at(-1)!) ? state.turn + 1 : state.turn;
        let result: z.output<typeof RewardResultSchema> = { team: 0 };
        if (state.labelled) {
          const parsed = RewardResultSchema.safeParse(reward(state.task, actions));
          if (!parsed.success) {
            const issue = parsed.error.issues[0]!;
            throw new Error(
              `data-file reward: returned ${issue.path.join(".") || "(root)"}: ${issue.message} (expected {team, perRole?, success?, done?})`,
            );
          }
          result = parsed.data;
        }
        const done = result.done === true || turn >= options.maxTurns;
        const localRewards: Record<AgentId, number> = {};
        for (const role of acted) localRewards[role] = result.perRole?.[role] ?? 0;
        return {
          state: { ...state, turn, actions, done },
          teamReward: result.team,
          localRewards,
          done,
          ...(state.labelled && result.success !== undefined ? { success: result.success } : {}),
        };
      },
    });
    const demonstrations = options.demonstrations;
    return {
      env: checkedEnvironment("data-file", env, payload as unknown as z.ZodType<Record<string, unknown>>),
      generateTasks: datasetTasks(
        `data-file-${stableHash(options).slice(0, 8)}`,
        () => parts,
        (p) => String(p[options.id]),
      ),
      team: (specialisation) =>
        textTeam("data-file", roles, specialisation, options.turnOrder, options.maxTurns),
      payload: { inputs, labels },
      ...(demonstrations !== undefined
        ? {
            demo: (task: Task<unknown>, _state: unknown, agent: AgentId) => {
              const field = demonstrations[agent];
              const value =
                field === undefined ? undefined : (task.payload as Record<string, unknown>)[field];
              if (value === undefined)
                throw new Error(`data-file: task ${task.id} has no demonstration for role ${agent}`);
              return typeof value === "string" ? value : JSON.stringify(value);
            },
          }
        : {}),
    };
  },
});
