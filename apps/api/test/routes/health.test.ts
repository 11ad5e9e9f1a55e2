/** GET /healthz: `{ ok: true }`, with the server's counters when the runtime has them. */
import { describe, expect, it } from "vitest";
import { newStats, type ServerStats } from "../../src/context.ts";
import { healthRoute, healthRoutes } from "../../src/routes/health.ts";
import { HealthSchema } from "../../src/schemas.ts";
import { mounted } from "./routes-fixture.ts";

describe("GET /healthz", () => {
  it("answers { ok: true } without stats, and the stats the runtime reports with them", async () => {
    const plain = await mounted(healthRoutes()).app.request("/healthz");
    expect(plain.status).toBe(200);
    expect(await plain.json()).toEqual({ ok: true });

    const stats: ServerStats = {
      ...newStats(),
      requests: 7,
      byStatus: { 200: 6, 429: 1 },
      rateLimited: 1,
      processes: 3,
      cpuMs: 120,
      ortRuns: 4,
      ortCpuMs: 80,
    };
    let asked = 0;
    const withStats = await mounted(
      healthRoutes(async () => {
        asked++;
        return stats;
      }),
    ).app.request("/healthz");
    const body = await withStats.json();
    expect(body).toEqual({ ok: true, stats: { ...stats, byStatus: { "200": 6, "429": 1 } } });
    expect(HealthSchema.parse(body)).toEqual(body);
    expect(asked).toBe(1);
  });

  it("is public in the OpenAPI document (no security), with a 500 answer declared", () => {
    expect(healthRoute.security).toEqual([]);
    expect(Object.keys(healthRoute.responses).sort()).toEqual(["200", "500"]);
  });
});
