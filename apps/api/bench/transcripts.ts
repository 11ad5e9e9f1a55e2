/**
 * Transcripts of a published team's solves, written one JSON line per solve, so that two checkouts
 * can be compared byte for byte (`cmp`): the Worker (infra/workers/wrangler.embedded.toml of the
 * checkout, in local workerd, the team copied object by object into its local R2) and the Node
 * server (the checkout's src/node.ts). Each task is solved twice: with the team's own sampling and
 * the sampling seed 7, and greedily (temperature 0). A line is the solve's answer without its
 * timings (`latencyMs`, each turn's `ms`).
 *
 *   node --conditions=@troupe/source --import tsx apps/api/bench/transcripts.ts \
 *     --store file:///tmp/store --team planpath --tasks 12 --out /tmp/after [--checkout /path/to/other]
 *
 * writes <out>.worker.jsonl and <out>.node.jsonl. `--checkout` runs another checkout's Worker and
 * server (its own sources and wrangler config), e.g. a `git worktree` of the commit before.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { ObjectStore } from "@troupe/storage";
import { openStore } from "@troupe/storage/node";
import { getPlatformProxy } from "wrangler";
import { sha256Hex } from "../src/auth.ts";
import { type R2BucketBinding, R2Store } from "../src/worker/r2-store.ts";
import { startLocalWorker } from "../test/local-worker.ts";
import { startApi, workspaceRoot } from "../test/processes.ts";

const KEY = "transcripts-key-0001";

const { values } = parseArgs({
  options: {
    store: { type: "string" },
    team: { type: "string" },
    tasks: { type: "string", default: "12" },
    out: { type: "string" },
    checkout: { type: "string", default: workspaceRoot },
  },
});
if (values.store === undefined || values.team === undefined || values.out === undefined) {
  console.error(
    "usage: transcripts.ts --store <uri> --team <name> --out <prefix> [--tasks n] [--checkout dir]",
  );
  process.exit(2);
}
const checkout = resolve(values.checkout!);
const tasks = Number(values.tasks);

/** Every object of one store copied into another, byte for byte. */
async function copyObjects(from: ObjectStore, to: ObjectStore): Promise<number> {
  const objects = await from.list("");
  for (const { key } of objects) await to.put(key, await from.get(key));
  return objects.length;
}

/** The solves of every task, twice each, as lines without timings. */
async function transcripts(url: string): Promise<string> {
  const lines: string[] = [];
  for (let seed = 0; seed < tasks; seed++) {
    for (const options of [{ seed: 7 }, { seed: 7, temperature: 0 }]) {
      const response = await fetch(new URL("/v1/solve", url), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
        body: JSON.stringify({ team: values.team, input: { generate: { seed } }, options }),
      });
      const {
        latencyMs: _latency,
        turns,
        ...body
      } = (await response.json()) as {
        latencyMs?: number;
        turns?: { ms?: number }[];
      };
      const untimed = turns?.map(({ ms: _ms, ...turn }) => turn);
      lines.push(JSON.stringify({ status: response.status, ...body, turns: untimed }));
    }
  }
  return `${lines.join("\n")}\n`;
}

const source = openStore(values.store, { cwd: process.cwd() });
const config = join(checkout, "infra/workers/wrangler.embedded.toml");
const persist = mkdtempSync(join(tmpdir(), "troupe-transcripts-"));
process.env.WRANGLER_BUILD_CONDITIONS = "@troupe/source,workerd,worker,browser";
process.env.WRANGLER_SEND_METRICS = "false";
try {
  const proxy = await getPlatformProxy<{ TEAMS: R2BucketBinding }>({
    configPath: config,
    persist: { path: join(persist, "v3") },
  });
  try {
    console.error(
      `copied ${await copyObjects(source, new R2Store(proxy.env.TEAMS))} objects into the Worker's R2`,
    );
  } finally {
    await proxy.dispose();
  }
  const worker = await startLocalWorker(config, persist, { TROUPE_API_KEY_HASHES: await sha256Hex(KEY) });
  try {
    writeFileSync(`${values.out}.worker.jsonl`, await transcripts((await worker.url).href));
  } finally {
    await worker.dispose();
  }
  const api = startApi(
    ["--port", "0", "--store", values.store],
    { TROUPE_API_KEY_HASHES: await sha256Hex(KEY) },
    checkout,
  );
  try {
    writeFileSync(`${values.out}.node.jsonl`, await transcripts(await api.listening));
  } finally {
    api.child.kill("SIGTERM");
  }
  console.error(`wrote ${values.out}.worker.jsonl and ${values.out}.node.jsonl (${checkout})`);
} finally {
  rmSync(persist, { recursive: true, force: true });
}
