import { describe, expect, it } from "vitest";
import { parseTokenIdTokens } from "../src/tokens.ts";

describe("token ids", () => {
  it("parses token_id:N tokens, all or nothing", () => {
    expect(parseTokenIdTokens(["token_id:0", "token_id:151645", "token_id:42"])).toEqual([0, 151645, 42]);
    expect(parseTokenIdTokens([])).toEqual([]);
    expect(parseTokenIdTokens(["token_id:1", "hello"])).toBeUndefined();
    expect(parseTokenIdTokens(["token_id:-1"])).toBeUndefined();
    expect(parseTokenIdTokens(["token_id:1 "])).toBeUndefined();
  });
});
