/** `trainer:sweep`'s command line as the sweep records it: each argument shell-quoted when it needs it. */
import { describe, expect, it } from "vitest";
import { commandLine } from "../../src/commands/sweep.ts";

describe("sweep command line", () => {
  it("quotes arguments with spaces and quotes, leaves plain ones bare", () => {
    expect(commandLine(["--grid", "a b.yaml", "--set", "x.y=it's"])).toBe(
      `npx nx run trainer:sweep -- --grid 'a b.yaml' --set 'x.y=it'\\''s'`,
    );
    expect(commandLine(["--seeds", "1,2", "--id", "lr@v2"])).toBe(
      "npx nx run trainer:sweep -- --seeds 1,2 --id lr@v2",
    );
    expect(commandLine([])).toBe("npx nx run trainer:sweep --");
  });
});
