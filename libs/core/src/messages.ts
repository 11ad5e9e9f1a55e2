import { z } from "zod";

/** A chat message, as OpenAI-compatible servers and HF chat templates understand it. */
export const ChatMessageSchema = z.object({
  role: z.enum(["system", "user", "assistant"]),
  content: z.string(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/**
 * What one agent sees of the state: the messages its policy is prompted with. The engine renders
 * them with the policy's chat template (the built-in tiny tokenizer uses a plain one).
 */
export interface Observation {
  readonly messages: readonly ChatMessage[];
}

/** Shorthand for an observation that is one user message, optionally after a system message. */
export function userObservation(content: string, system?: string): Observation {
  const messages: ChatMessage[] = [];
  if (system !== undefined) messages.push({ role: "system", content: system });
  messages.push({ role: "user", content });
  return { messages };
}
