/**
 * `api serve` checks its store before it listens, as `trainer train` does: a store that cannot hold
 * teams is one `error:` line and exit code 2, not a server whose every solve fails. And it runs the
 * agents' code of the teams that write some in its own sandbox (`--sandbox auto|on|off`).
 */
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileStore } from "@troupe/storage/node";
import { type CodeAnswer, createTeamRegistry } from "@troupe/teams";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxRefusedError, serverSandbox } from "../src/node.ts";
import { tinyTeam } from "./fixtures.ts";
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

describe("api serve: the sandbox", () => {
  const teams = join(root, "teams");
  beforeAll(async () => {
    mkdirSync(teams);
    // A coding team (helper + main): the hidden tests of its program run in the sandbox.
    const coding = { name: "coding", options: { roles: "helper-main", maxTurns: 1, test: "coophumaneval" } };
    const input = await tinyTeam("coders", coding, { roles: ["helper", "main"], maxPositions: 4096 });
    await createTeamRegistry(new FileStore(teams)).publish(input);
  });

  /** Starts `api serve` on the team store with `args` and `env`; its log so far, and the process. */
  function serve(args: readonly string[], env: Record<string, string> = {}) {
    const started = startApi(["--port", "0", "--store", `file://${teams}`, ...args], env);
    const log: string[] = [];
    started.child.stderr!.on("data", (chunk) => log.push(chunk.toString()));
    return { ...started, log: () => log.join("") };
  }
  const solve = async (url: string) => {
    const res = await fetch(`${url}/v1/solve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ team: "coders", input: { generate: { seed: 0 } }, options: { seed: 1 } }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const stop = (child: ChildProcess) =>
    new Promise<void>((done) => {
      child.once("exit", () => done());
      child.kill("SIGTERM");
    });
  const listeningLine = (log: string) => JSON.parse(log.split("\n").find((l) => l.includes('"listening"'))!);

  it("auto (the default): the team's program runs in bubblewrap, and the team answers", async () => {
    const api = serve([]);
    try {
      const { status, body } = await solve(await api.listening);
      expect(status).toBe(200);
      expect((body.turns as { role: string }[]).map((t) => t.role).sort()).toEqual(["helper", "main"]);
      // An untrained model's program: python3 in the sandbox names why it does not compile.
      const answer = body.answer as CodeAnswer;
      expect(answer).toMatchObject({ kind: "code", entryPoint: "x_or_y", tests: { passed: 0, total: 5 } });
      expect(answer.tests!.error).toMatch(/^line \d+: /);
      expect(body.solved).toBe(false);
      expect(listeningLine(api.log()).sandbox).toBe("bubblewrap");
    } finally {
      await stop(api.child);
    }
  }, 120_000);

  it("off: the same team is refused (501)", async () => {
    const off = serve(["--sandbox", "off"]);
    try {
      const { status, body } = await solve(await off.listening);
      expect([status, (body.error as { code: string }).code]).toEqual([501, "unsupported"]);
      expect(listeningLine(off.log()).sandbox).toBe("off");
    } finally {
      await stop(off.child);
    }
  }, 120_000);

  it("where bubblewrap cannot run: on refuses in one line, auto serves on and says why", async () => {
    const missing = { bwrap: join(root, "no-such-bwrap") };
    const refused = serverSandbox({ sandbox: "on" }, missing);
    await expect(refused).rejects.toThrow(SandboxRefusedError);
    await expect(refused).rejects.toThrow(
      `--sandbox on: bubblewrap cannot run here (\`${missing.bwrap}\` does not exist): install it (bash tools/system-deps.sh), or pass --sandbox off`,
    );
    expect(await serverSandbox({ sandbox: "auto" }, missing)).toEqual({
      state: `unavailable (\`${missing.bwrap}\` does not exist): teams that run the agents' code get 501`,
    });
    expect(await serverSandbox({ sandbox: "off" }, missing)).toEqual({ state: "off" });
  }, 60_000);
});
