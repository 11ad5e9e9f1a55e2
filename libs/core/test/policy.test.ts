/** Sampling parameters (policy.ts): the defaults, overrides laid over them, and the refusals naming the field. */
import { expect, it } from "vitest";
import {
  defaultSampling,
  SamplingOverridesSchema,
  SamplingParamsSchema,
  samplingParams,
} from "../src/policy.ts";

it("defaults: T = 1, no top-p / top-k cut, 256 tokens, no stops", () => {
  expect(defaultSampling).toEqual({
    temperature: 1,
    topP: 1,
    topK: 0,
    maxTokens: 256,
    stop: [],
    stopTokenIds: [],
  });
  expect(samplingParams()).toEqual(defaultSampling);
});

it("samplingParams lays overrides over the defaults", () => {
  expect(samplingParams({ temperature: 0, stop: ["\n"] })).toEqual({
    ...defaultSampling,
    temperature: 0,
    stop: ["\n"],
  });
});

it.each([
  [{ temperature: -0.1 }, "temperature"],
  [{ topP: 0 }, "topP"],
  [{ topP: 1.5 }, "topP"],
  [{ topK: 1.5 }, "topK"],
  [{ maxTokens: 0 }, "maxTokens"],
  [{ stop: [""] }, "stop"],
  [{ stopTokenIds: [-1] }, "stopTokenIds"],
])("refuses %o, naming %s", (overrides, field) => {
  const parsed = SamplingParamsSchema.safeParse(overrides);
  expect(parsed.success).toBe(false);
  expect(parsed.error!.issues[0]!.path[0]).toBe(field);
  expect(() => samplingParams(overrides)).toThrow();
});

it("overrides keep only the fields given (no defaults) and refuse unknown ones", () => {
  expect(SamplingOverridesSchema.parse({})).toEqual({});
  expect(SamplingOverridesSchema.parse({ temperature: 0.5 })).toEqual({ temperature: 0.5 });
  expect(SamplingOverridesSchema.safeParse({ temperature: -1 }).success).toBe(false);
  expect(SamplingOverridesSchema.safeParse({ temp: 0.5 }).success).toBe(false);
});
