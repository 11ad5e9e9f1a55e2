import type { z } from "zod";

/** Parses options with a zod schema; the error names the environment and the bad field. */
export function parseOptions<S extends z.ZodType>(what: string, schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${what}: ${issue.path.join(".") || "(root)"}: ${issue.message}`);
  }
  return parsed.data;
}
