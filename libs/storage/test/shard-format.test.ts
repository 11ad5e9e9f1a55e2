/**
 * The Parquet columns come from the Sample zod schema: every field of a Sample has its column
 * (a new field gets one without touching the codec), a field no column can hold fails naming it,
 * and a Sample with every field set comes back equal.
 */
import { parseRolloutSample, parseSample, type RolloutSample, SampleSchema } from "@troupe/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { decodeShard, encodeShard, SHARD_FORMATS, sampleColumns } from "../src/shard-format.ts";
import { syntheticSamples } from "./samples.ts";

/** Every field path of a Sample, objects one level deep (the codec's flattening). */
function fieldPaths(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape).flatMap(([name, field]) =>
    field instanceof z.ZodObject ? Object.keys(field.shape).map((inner) => `${name}.${inner}`) : [name],
  );
}

describe("shard columns", () => {
  it("every Sample field has exactly one column", () => {
    const columns = sampleColumns().map((c) => c.name);
    expect([...columns].sort()).toEqual(fieldPaths(SampleSchema).sort());
    expect(new Set(columns).size).toBe(columns.length);
  });

  it("holds a rollout worker's samples without advantages; a step's reader refuses them, naming the field", async () => {
    const [sample] = syntheticSamples(1);
    const { advantage: _, ...rollout } = sample!;
    const bytes = encodeShard([rollout as RolloutSample], "parquet");
    expect(await decodeShard(bytes, "parquet", "w", parseRolloutSample)).toEqual([rollout]);
    await expect(decodeShard(bytes, "parquet", "w", parseSample)).rejects.toThrow(/^w: row 0: advantage: /);
    // a step's shard read as rollout samples: the advantage is dropped
    expect(await decodeShard(encodeShard([sample!], "parquet"), "parquet", "s", parseRolloutSample)).toEqual([
      rollout,
    ]);
  });

  it("a field added to the Sample gets a column; one no column can hold fails, named", () => {
    const extended = SampleSchema.extend({ critic: z.number(), notes: z.array(z.string()).optional() });
    expect(
      sampleColumns(extended as never).map((c) => [c.name, c.kind === "scalar" ? c.type : c.element]),
    ).toEqual(
      expect.arrayContaining([
        ["critic", "DOUBLE"],
        ["notes", "JSON"],
      ]),
    );
    const unsupported = SampleSchema.extend({ when: z.date() });
    expect(() => sampleColumns(unsupported as never)).toThrow(
      /Sample field "when" \(zod date\) has no Parquet column/,
    );
  });

  it("a Sample with every field set round-trips, with and without the optional one", async () => {
    const [a, b] = syntheticSamples(2, 7);
    const full = { ...a!, success: true };
    const { success: _dropped, ...bare } = b!;
    const back = await decodeShard(encodeShard([full, bare]), "parquet", "t", parseSample);
    expect(back).toEqual([full, bare]);
  });
});

describe.each(SHARD_FORMATS)("shard format %s", (format) => {
  it("round-trips Samples exactly (optional success kept/omitted)", async () => {
    const samples = syntheticSamples(50, 3);
    const back = await decodeShard(encodeShard(samples, format), format, "shard-x", parseSample);
    expect(back).toEqual(samples);
    expect("success" in back[1]!).toBe(false);
    expect(encodeShard(samples, format)).toEqual(encodeShard(samples, format)); // deterministic bytes
  });
  it("names shard, row and field of an invalid row", async () => {
    const samples = syntheticSamples(3, 4);
    (samples[2]!.provenance as { step: number }).step = 1.5;
    await expect(decodeShard(encodeShard(samples, format), format, "shard-y", parseSample)).rejects.toThrow(
      "shard-y: row 2: provenance.step:",
    );
  });
  it("rejects a truncated shard naming it", async () => {
    const bytes = encodeShard(syntheticSamples(20, 5), format);
    await expect(
      decodeShard(bytes.subarray(0, bytes.length - 40), format, "shard-z", parseSample),
    ).rejects.toThrow(/^shard-z: /);
  });
});
