import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MicroBatchTooLargeError, planMicroBatches } from "../src/micro-batch.ts";

const ranges = (plan: ReturnType<typeof planMicroBatches>) => plan.map((m) => [m.start, m.end, m.longest]);

describe("planMicroBatches", () => {
  it("splits by count alone exactly as fixed-size chunks do", () => {
    expect(ranges(planMicroBatches([5, 5, 5, 5, 5], { maxSequences: 2 }))).toEqual([
      [0, 2, 5],
      [2, 4, 5],
      [4, 5, 5],
    ]);
  });

  it("bounds padded tokens (count × longest), keeping the order", () => {
    // 10+3 → 2·10 = 20 ≤ 24; +2 → 3·10 = 30 > 24. Then 2, 12 → 24; +1 → 36. Then 1, 1, 1.
    expect(ranges(planMicroBatches([10, 3, 2, 12, 1, 1, 1], { maxSequences: 8, maxTokens: 24 }))).toEqual([
      [0, 2, 10],
      [2, 4, 12],
      [4, 7, 1],
    ]);
  });

  it("asks `fits` with the count and the longest sequence", () => {
    const asked: [number, number][] = [];
    const plan = planMicroBatches([4, 9, 2], {
      maxSequences: 3,
      fits: (count, longest) => {
        asked.push([count, longest]);
        return count * longest * longest <= 170; // a cost quadratic in length, like attention
      },
    });
    expect(ranges(plan)).toEqual([
      [0, 2, 9], // 2·81 = 162
      [2, 3, 2],
    ]);
    expect(asked).toEqual([
      [1, 4],
      [2, 9],
      [3, 9],
      [1, 2],
    ]);
  });

  it("refuses a sequence that does not fit alone, naming it", () => {
    expect(() => planMicroBatches([3, 40, 2], { maxSequences: 4, maxTokens: 32 })).toThrow(
      new MicroBatchTooLargeError(1, 40, "sequence 1 has 40 tokens, more than the 32 a micro-batch may hold"),
    );
    try {
      planMicroBatches([3, 40], { maxSequences: 4, fits: (_, longest) => longest < 10 });
    } catch (error) {
      expect(error).toBeInstanceOf(MicroBatchTooLargeError);
      expect((error as MicroBatchTooLargeError).index).toBe(1);
    }
    expect(() => planMicroBatches([1], { maxSequences: 0 })).toThrow(/maxSequences/);
  });

  it("covers the batch in order, each micro-batch within the limits and as full as the next sequence allows", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 60, max: 400 }),
        (lengths, maxSequences, maxTokens) => {
          const plan = planMicroBatches(lengths, { maxSequences, maxTokens });
          expect(plan.map((m) => m.start)).toEqual(
            plan.length ? [0, ...plan.slice(0, -1).map((m) => m.end)] : [],
          );
          expect(plan.at(-1)?.end ?? 0).toBe(lengths.length);
          for (const m of plan) {
            const part = lengths.slice(m.start, m.end);
            expect(m.longest).toBe(Math.max(...part));
            expect(part.length).toBeLessThanOrEqual(maxSequences);
            expect(part.length * m.longest).toBeLessThanOrEqual(maxTokens);
            if (m.end < lengths.length) {
              const next = Math.max(m.longest, lengths[m.end]!);
              expect(part.length + 1 > maxSequences || (part.length + 1) * next > maxTokens).toBe(true);
            }
          }
        },
      ),
    );
  });
});
