import { samplingParams } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { chatCompletionsBody, completionsBody, echoScoringBody, samplingFields } from "../src/requests.ts";

describe("request bodies", () => {
  const sampling = samplingParams({
    temperature: 0.7,
    topP: 0.9,
    topK: 20,
    maxTokens: 64,
    stop: ["\n\n"],
    stopTokenIds: [258],
  });

  it("maps sampling params to vLLM fields", () => {
    expect(samplingFields(sampling, 123, "vllm")).toEqual({
      temperature: 0.7,
      top_p: 0.9,
      top_k: 20,
      min_p: 0,
      repetition_penalty: 1,
      max_tokens: 64,
      stop: ["\n\n"],
      stop_token_ids: [258],
      seed: 123,
      n: 1,
    });
  });

  it("sends disabled top-k as -1 and omits empty stop lists", () => {
    expect(samplingFields(samplingParams({}), 5, "vllm")).toEqual({
      temperature: 1,
      top_p: 1,
      top_k: -1,
      min_p: 0,
      repetition_penalty: 1,
      max_tokens: 256,
      seed: 5,
      n: 1,
    });
  });

  it("refuses top-k and stop token ids in the openai dialect instead of dropping them", () => {
    expect(() => samplingFields(sampling, 1, "openai")).toThrow(
      /sampling.topK = 20: the OpenAI API has no top_k/,
    );
    expect(() => samplingFields(samplingParams({ stopTokenIds: [7] }), 1, "openai")).toThrow(
      /sampling.stopTokenIds = \[7\]/,
    );
    expect(samplingFields(samplingParams({ stop: ["x"] }), 1, "openai")).toEqual({
      temperature: 1,
      top_p: 1,
      max_tokens: 256,
      stop: ["x"],
      seed: 1,
      n: 1,
    });
  });

  it("builds completions and echo bodies; extraBody overrides", () => {
    expect(
      completionsBody("m", [1, 2], samplingParams({ maxTokens: 3 }), 9, "vllm", { min_p: 0.1, n: 1 }),
    ).toEqual({
      model: "m",
      prompt: [1, 2],
      temperature: 1,
      top_p: 1,
      top_k: -1,
      repetition_penalty: 1,
      max_tokens: 3,
      seed: 9,
      n: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      min_p: 0.1,
    });
    expect(echoScoringBody("m", [4, 5, 6], "vllm")).toEqual({
      model: "m",
      prompt: [4, 5, 6],
      echo: true,
      max_tokens: 1,
      temperature: 1,
      logprobs: 1,
      return_tokens_as_token_ids: true,
    });
  });

  it("builds chat bodies: the messages, logprobs true, and no token-id fields in the openai dialect", () => {
    const messages = [
      { role: "system" as const, content: "s" },
      { role: "user" as const, content: "u" },
    ];
    expect(chatCompletionsBody("m", messages, samplingParams({ maxTokens: 2 }), 4, "openai")).toEqual({
      model: "m",
      messages,
      temperature: 1,
      top_p: 1,
      max_tokens: 2,
      seed: 4,
      n: 1,
      logprobs: true,
    });
    expect(chatCompletionsBody("m", messages, samplingParams({}), 4, "vllm", { seed: 5 })).toMatchObject({
      logprobs: true,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      seed: 5,
    });
  });
});
