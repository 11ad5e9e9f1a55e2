/**
 * A fault-injecting HTTP proxy for the S3 tests: forwards requests to the real server and, on a
 * seeded schedule, answers 500 without forwarding, forwards and then answers 500 anyway (the
 * write happened but the client cannot know), stalls past the client's timeout, delays, cuts the
 * connection before forwarding, or cuts it halfway through the response body.
 * Hand-written (a few dozen lines of node:http) because proxies on npm inject faults per route,
 * not as a seeded random schedule over every request.
 */
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Rng } from "@troupe/core";

export interface FaultRates {
  /** Answer 500 InternalError without forwarding. */
  readonly error500: number;
  /** Forward, discard the server's answer, answer 500 (ambiguous outcome). */
  readonly error500After: number;
  /** 503 SlowDown (throttling) without forwarding. */
  readonly slowDown: number;
  /** Delay this long (uniform up to slowMs) before forwarding. */
  readonly slow: number;
  readonly slowMs: number;
  /** Hold the request past the client's timeout (stallMs), then drop it. */
  readonly stall: number;
  readonly stallMs: number;
  /** Destroy the client socket before forwarding. */
  readonly dropBefore: number;
  /** Forward, send the headers and half the body, then destroy the socket. */
  readonly dropMidBody: number;
}

export type FaultKind = keyof Omit<FaultRates, "slowMs" | "stallMs"> | "none";

/** Every fault the proxy injects, in the order its schedule draws them. */
export const FAULT_KINDS: readonly Exclude<FaultKind, "none">[] = [
  "error500",
  "error500After",
  "slowDown",
  "slow",
  "stall",
  "dropBefore",
  "dropMidBody",
];

export interface FaultProxy {
  readonly endpoint: string;
  /** How many of each fault were injected so far. */
  readonly counts: Record<FaultKind, number>;
  /** Turns injection on or off (e.g. for a clean read-back through the same proxy). */
  enabled: boolean;
  close(): Promise<void>;
}

export async function startFaultProxy(target: string, rates: FaultRates, seed: number): Promise<FaultProxy> {
  const rng = new Rng(seed);
  const upstream = new URL(target);
  const counts: Record<FaultKind, number> = {
    none: 0,
    error500: 0,
    error500After: 0,
    slowDown: 0,
    slow: 0,
    stall: 0,
    dropBefore: 0,
    dropMidBody: 0,
  };
  const state = { enabled: true };

  const pick = (): FaultKind => {
    if (!state.enabled) return "none";
    let u = rng.float();
    for (const kind of FAULT_KINDS) {
      const p = rates[kind];
      if (u < p) return kind;
      u -= p;
    }
    return "none";
  };

  const s3Error = (code: string) =>
    `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>injected</Message></Error>`;

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const fault = pick();
      counts[fault]++;
      const body = Buffer.concat(chunks);
      if (fault === "error500" || fault === "slowDown") {
        const status = fault === "error500" ? 500 : 503;
        const xml = s3Error(fault === "error500" ? "InternalError" : "SlowDown");
        res.writeHead(status, {
          "content-type": "application/xml",
          "content-length": Buffer.byteLength(xml),
        });
        res.end(xml);
        return;
      }
      if (fault === "dropBefore") {
        req.socket.destroy();
        return;
      }
      if (fault === "stall") {
        setTimeout(() => req.socket.destroy(), rates.stallMs);
        return;
      }
      if (fault === "slow") await new Promise((r) => setTimeout(r, rng.float() * rates.slowMs));
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: req.headers,
        },
        (up) => {
          const parts: Buffer[] = [];
          up.on("data", (c: Buffer) => parts.push(c));
          up.on("end", () => {
            const answer = Buffer.concat(parts);
            if (fault === "error500After") {
              const xml = s3Error("InternalError");
              res.writeHead(500, {
                "content-type": "application/xml",
                "content-length": Buffer.byteLength(xml),
              });
              res.end(xml);
              return;
            }
            res.writeHead(up.statusCode ?? 502, up.headers);
            if (fault === "dropMidBody" && answer.length > 1) {
              res.write(answer.subarray(0, answer.length >> 1), () => res.socket?.destroy());
              return;
            }
            res.end(answer);
          });
        },
      );
      forward.on("error", () => req.socket.destroy());
      forward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    counts,
    get enabled() {
      return state.enabled;
    },
    set enabled(value: boolean) {
      state.enabled = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
