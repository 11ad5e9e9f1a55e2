import { describe, expect, it } from "vitest";
import { ChatMessageSchema, userObservation } from "../src/messages.ts";

describe("messages", () => {
  it("userObservation is one user message", () => {
    expect(userObservation("hi")).toEqual({ messages: [{ role: "user", content: "hi" }] });
  });

  it("userObservation puts the system message first", () => {
    expect(userObservation("hi", "be brief")).toEqual({
      messages: [
        { role: "system", content: "be brief" },
        { role: "user", content: "hi" },
      ],
    });
  });

  it("a chat message has one of the three roles", () => {
    expect(ChatMessageSchema.parse({ role: "assistant", content: "" })).toEqual({
      role: "assistant",
      content: "",
    });
    expect(ChatMessageSchema.safeParse({ role: "tool", content: "x" }).success).toBe(false);
    expect(ChatMessageSchema.safeParse({ role: "user" }).success).toBe(false);
  });
});
