/**
 * Where a session's time goes, from the profiles ONNX Runtime writes when sessions are created with
 * TROUPE_ORT_PROFILE=1 (session.ts; ORT writes a session's file when the session is released or its
 * profiling is ended). Per file: the runs, the mean wall of a run, the kernels a run executes, and
 * per operator type the mean time a run spends in it, largest first; `--nodes` lists single nodes
 * with their input shapes instead.
 *
 * Run: `npm run bench:ort-profile -- [--nodes] [--top N] onnxruntime_profile_*.json`
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";

/** The fields read from an ORT profile's trace events (Chrome trace format). */
const TraceEvent = z.object({
  cat: z.string().optional(),
  name: z.string(),
  dur: z.number().optional(),
  args: z
    .object({ op_name: z.string().optional(), input_type_shape: z.unknown().optional() })
    .passthrough()
    .optional(),
});
const Profile = z.array(TraceEvent);

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { nodes: { type: "boolean", default: false }, top: { type: "string", default: "20" } },
});
const top = Number(values.top);
if (positionals.length === 0 || !Number.isInteger(top) || top < 1) {
  console.error("usage: ort-profile.ts [--nodes] [--top N] <onnxruntime_profile_*.json>...");
  process.exit(2);
}

for (const file of positionals) {
  let events: z.infer<typeof Profile>;
  try {
    events = Profile.parse(JSON.parse(readFileSync(file, "utf8")));
  } catch (error) {
    // An empty or cut file: the session was not released (or its profiling not ended) before exit.
    console.error(`${file}: not a complete ORT profile (${(error as Error).message.split("\n")[0]})`);
    process.exitCode = 1;
    continue;
  }
  const runs = events.filter((e) => e.name === "model_run");
  if (runs.length === 0) continue;
  const kernels = events.filter((e) => e.cat === "Node" && e.name.endsWith("_kernel_time"));
  const perRun = (us: number) => (us / runs.length).toFixed(1);
  const totals = new Map<string, { us: number; count: number; shapes: string }>();
  for (const e of kernels) {
    const key = values.nodes ? e.name.slice(0, -"_kernel_time".length) : (e.args?.op_name ?? "?");
    const entry = totals.get(key) ?? {
      us: 0,
      count: 0,
      shapes: JSON.stringify(e.args?.input_type_shape ?? []),
    };
    entry.us += e.dur ?? 0;
    entry.count++;
    totals.set(key, entry);
  }
  const sum = (xs: readonly { dur?: number | undefined }[]) => xs.reduce((a, e) => a + (e.dur ?? 0), 0);
  console.log(
    `${basename(file)}: ${runs.length} runs, ${perRun(sum(runs))} us a run, ` +
      `${(kernels.length / runs.length).toFixed(0)} kernels a run, ${perRun(sum(kernels))} us in kernels`,
  );
  const rows = [...totals].sort((a, b) => b[1].us - a[1].us).slice(0, top);
  for (const [key, t] of rows) {
    const line = `  ${perRun(t.us).padStart(10)} us  x${(t.count / runs.length).toFixed(1).padEnd(5)} ${key}`;
    console.log(values.nodes ? `${line}  ${t.shapes}` : line);
  }
}
