/**
 * Large frames cross the worker → controller pipe in time linear in their size: the reader queues
 * chunks and copies each payload once (a reader that re-copies everything it holds on every chunk
 * took 102 s for 64 MB). 30 MB and 300 MB frames through the reader, 10 MB and 100 MB through a real
 * pipe from a real worker: the big one may take at most 25× the small one (linear: ~10×; quadratic:
 * ~100×), and it must arrive intact.
 */
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameReader } from "../src/protocol.ts";
import { WorkerProcess } from "../src/worker-process.ts";
import { PYTHON, TEST_WORKER_ARGS, torchAvailable } from "./torch-available.ts";

const MB = 1_000_000;

function checkPattern(bytes: Uint8Array): void {
  // byte i is i mod 256 (the worker's `echo` pattern); check a strided sample and the tail
  for (let i = 0; i < bytes.length; i += 4099)
    if (bytes[i] !== i % 256) throw new Error(`byte ${i} is ${bytes[i]}`);
  const last = bytes.length - 1;
  expect(bytes[last]).toBe(last % 256);
}

describe("FrameReader on large frames", () => {
  it("reads a 300 MB frame pushed in 64 KiB chunks in linear time", () => {
    const time = (size: number) => {
      const big = new Uint8Array(size);
      for (let i = 0; i < 256; i++) big[i] = i;
      for (let n = 256; n < size; n *= 2) big.copyWithin(n, 0, Math.min(n, size - n));
      const bytes = encodeFrame({
        kind: "response",
        id: 1,
        op: "save",
        body: {},
        payloads: new Map([["file:x", big]]),
      });
      const reader = new FrameReader();
      const started = performance.now();
      const frames = [];
      for (let at = 0; at < bytes.length; at += 65536)
        frames.push(...reader.push(bytes.subarray(at, at + 65536)));
      const ms = performance.now() - started;
      expect(frames).toHaveLength(1);
      checkPattern(frames[0]!.payloads.get("file:x") as Uint8Array);
      expect(reader.pending).toBe(0);
      return ms;
    };
    const small = time(30 * MB);
    const large = time(300 * MB);
    expect(large).toBeLessThan(25 * Math.max(small, 20));
  });
});

describe.skipIf(!torchAvailable)("large frames from the worker", () => {
  it("a 100 MB reply crosses the pipe in linear time and intact", async () => {
    const worker = await WorkerProcess.start({ python: PYTHON, workerArgs: TEST_WORKER_ARGS });
    try {
      const time = async (size: number) => {
        const started = performance.now();
        const reply = await worker.request("echo", { bytes: size });
        const ms = performance.now() - started;
        const pattern = reply.payloads.get("pattern") as Uint8Array;
        expect(pattern.length).toBe(size);
        checkPattern(pattern);
        return ms;
      };
      await time(1 * MB); // warm-up
      const small = await time(10 * MB);
      const large = await time(100 * MB);
      console.log(`echo through the pipe: 10 MB ${small.toFixed(0)} ms, 100 MB ${large.toFixed(0)} ms`);
      expect(large).toBeLessThan(25 * Math.max(small, 50));
    } finally {
      await worker.close();
    }
  }, 300_000);
});
