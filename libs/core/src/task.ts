import { z } from "zod";

/** Where a task belongs. Environments guarantee train and test never share an instance. */
export const SplitSchema = z.enum(["train", "validation", "test"]);
export type Split = z.infer<typeof SplitSchema>;

/** One problem for a team: a puzzle, a coding problem, a question. `payload` is environment-specific. */
export interface Task<Payload = unknown> {
  readonly id: string;
  readonly split: Split;
  readonly payload: Payload;
}
