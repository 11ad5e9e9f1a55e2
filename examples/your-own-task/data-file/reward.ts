/**
 * The reward of the data-file version of sum-sentence: called after every step with the task's
 * fields (inputs and labels) and every answer so far, in order.
 */
import type { DataFileAction, DataFileReward } from "@troupe/envs";

const numbersIn = (text: string) => (text.match(/-?\d+/g) ?? []).map(Number);

export function reward(task: Record<string, unknown>, actions: readonly DataFileAction[]): DataFileReward {
  const a = task.a as number;
  const b = task.b as number;
  const last = actions.at(-1)!;
  if (last.role === "reader") {
    const [x, y] = numbersIn(last.text);
    return { team: 0, perRole: { reader: x === a && y === b ? 1 : 0 } };
  }
  const solved = numbersIn(last.text)[0] === a + b;
  return { team: solved ? 1 : 0, perRole: { calculator: solved ? 1 : 0 }, success: solved, done: true };
}
