/**
 * `api serve` checks its store before it listens, as `trainer train` does: a store that cannot hold
 * teams is one `error:` line and exit code 2, not a server whose every solve fails.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startApi } from "./processes.ts";

const root = mkdtempSync(join(tmpdir(), "troupe-serve-store-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The api's exit code and stderr when it stops before listening. */
async function refusal(store: string): Promise<{ code: number | null; stderr: string }> {
  const { child, listening } = startApi(["--port", "0", "--store", store]);
  let stderr = "";
  child.stderr!.on("data", (chunk) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((done) => child.once("exit", done));
  await expect(listening).rejects.toThrow(/api exited/);
  return { code, stderr };
}

describe("api serve: the store at start-up", () => {
  it("refuses a folder that does not exist, a file and /proc, each in one line", async () => {
    const file = join(root, "a-file");
    writeFileSync(file, "not a folder\n");
    for (const [store, detail] of [
      [`file://${join(root, "missing")}`, "the folder does not exist"],
      [`file://${file}`, "is a file, not a folder"],
      ["file:///proc/troupe", "a kernel file system: runs cannot be stored there"],
    ] as const) {
      const { code, stderr } = await refusal(store);
      expect(code, store).toBe(2);
      expect(stderr, store).toMatch(new RegExp(`^error: store ${store}: .*${detail}\\n$`));
    }
  }, 60_000);
});
