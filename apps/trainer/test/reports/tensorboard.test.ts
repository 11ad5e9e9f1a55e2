/**
 * TensorBoard event files: the writer's CRC against CRC-32C's published check values, its records
 * read back the way TensorBoard's loader reads them (TFRecord framing with both masked CRCs
 * verified, then the `tensorboard.Event` protobuf decoded with TensorBoard's own message
 * definitions from event.proto and summary.proto), and a tiny run with logging.tensorboard whose
 * events file holds every committed step's metrics.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { FileStore } from "@troupe/storage/node";
import protobuf from "protobufjs";
import { describe, expect, it } from "vitest";
import { runRecipe } from "../../src/experiments/run-recipe.ts";
import { loadRecipeText } from "../../src/recipe.ts";
import { crc32c, EventFileWriter, maskedCrc32c } from "../../src/reports/tensorboard.ts";
import { TINY_PLAN_PATH, tempRoot } from "../tiny.ts";

// The fields TensorBoard reads, as tensorboard/compat/proto/event.proto and summary.proto define them.
const TENSORBOARD_PROTO = `
syntax = "proto3";
package tensorboard;
message Event {
  double wall_time = 1;
  int64 step = 2;
  oneof what {
    string file_version = 3;
    bytes graph_def = 4;
    Summary summary = 5;
  }
}
message Summary {
  message Value {
    string node_name = 7;
    string tag = 1;
    oneof value {
      float simple_value = 2;
      bytes obsolete_old_style_histogram = 3;
    }
  }
  repeated Value value = 1;
}
`;
const Event = protobuf.parse(TENSORBOARD_PROTO).root.lookupType("tensorboard.Event");

interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  scalars: Record<string, number>;
}

/** TFRecord reading as TensorBoard's loader does it: length + masked CRC, data + masked CRC. */
function readEvents(bytes: Uint8Array): DecodedEvent[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: DecodedEvent[] = [];
  let at = 0;
  while (at < bytes.length) {
    const length = Number(view.getBigUint64(at, true));
    expect(view.getUint32(at + 8, true)).toBe(maskedCrc32c(bytes.subarray(at, at + 8)));
    const data = bytes.subarray(at + 12, at + 12 + length);
    expect(view.getUint32(at + 12 + length, true)).toBe(maskedCrc32c(data));
    at += 12 + length + 4;
    const event = Event.toObject(Event.decode(data), { longs: Number, oneofs: true }) as {
      wallTime: number;
      step?: number;
      fileVersion?: string;
      summary?: { value?: { tag: string; simpleValue: number }[] };
    };
    out.push({
      wallTime: event.wallTime,
      step: event.step ?? 0,
      ...(event.fileVersion ? { fileVersion: event.fileVersion } : {}),
      scalars: Object.fromEntries((event.summary?.value ?? []).map((v) => [v.tag, v.simpleValue])),
    });
  }
  return out;
}

const root = tempRoot("tb");

describe("TensorBoard event files", () => {
  it("computes CRC-32C's check values", () => {
    expect(crc32c(new TextEncoder().encode("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // RFC 3720, 32 bytes of zeros
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
  });

  it("writes records TensorBoard's format reads back: the file version first, then scalars", () => {
    const writer = new EventFileWriter(1_700_000_000.5, "host name");
    writer.add(0, { "eval/successRate": 0.25, tasks: 64 }, 1_700_000_001);
    writer.add(7, { "planner/loss": -0.125, note: "text", flag: true, nan: Number.NaN }, 1_700_000_002);
    expect(writer.name).toBe("events.out.tfevents.1700000000.host-name");
    const events = readEvents(writer.bytes());
    expect(events).toEqual([
      { wallTime: 1_700_000_000.5, step: 0, fileVersion: "brain.Event:2", scalars: {} },
      { wallTime: 1_700_000_001, step: 0, scalars: { "eval/successRate": 0.25, tasks: 64 } },
      { wallTime: 1_700_000_002, step: 7, scalars: { "planner/loss": -0.125, flag: 1 } },
    ]);
  });

  it("a run with logging.tensorboard writes every committed step's metrics", async () => {
    const store = new FileStore(join(root, "store"));
    const recipe = loadRecipeText(
      `
name: tb
seed: 1
${TINY_PLAN_PATH}
strategy: { name: parallel, groupSize: 2 }
sampling: { temperature: 1, maxTokens: 8 }
train: { steps: 2, tasksPerStep: 2, evalEvery: 1, evalTasks: 2, evalTemperature: 0, checkpointEvery: 1 }
`,
      ["logging.tensorboard=true"],
    );
    expect(recipe.logging).toEqual({ tensorboard: true });
    await runRecipe({ recipe, runId: "tb-1", store, reporter: { step() {}, eval() {}, note() {} } });
    const folder = join(root, "store", "runs", "tb-1", "tensorboard");
    const files = readdirSync(folder);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^events\.out\.tfevents\.\d+\.troupe$/);
    const events = readEvents(new Uint8Array(readFileSync(join(folder, files[0]!))));
    expect(events.map((e) => e.step)).toEqual([0, 0, 1, 2]);
    expect(events[0]!.fileVersion).toBe("brain.Event:2");
    const rows = readFileSync(join(root, "store", "runs", "tb-1", "metrics.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { step: number; source: string; metrics: Record<string, unknown> });
    const start = rows.find((r) => r.source === "eval-start")!;
    expect(events[1]!.scalars["eval/successRate"]).toBe(Math.fround(start.metrics.successRate as number));
    for (const row of rows.filter((r) => r.source === "learner")) {
      const event = events.find((e) => e.step === row.step + 1)!;
      const numeric = Object.entries(row.metrics).filter(([, v]) => typeof v === "number");
      expect(Object.keys(event.scalars).sort()).toEqual(numeric.map(([k]) => k).sort());
      for (const [k, v] of numeric) expect(event.scalars[k]).toBe(Math.fround(v as number));
    }
  });
});
