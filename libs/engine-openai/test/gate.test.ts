import { describe, expect, it } from "vitest";
import { PolicyGate } from "../src/gate.ts";

describe("policy gate", () => {
  it("a reload waits for requests in flight and holds new ones; other policies pass", async () => {
    const gate = new PolicyGate();
    const log: string[] = [];
    const tick = () => new Promise((r) => setTimeout(r, 5));
    const req = (id: string, name: string) =>
      gate.shared(id, async () => {
        log.push(`${name}+`);
        await tick();
        log.push(`${name}-`);
      });
    const first = req("a", "r1");
    const reload = gate.exclusive("a", async () => {
      log.push("reload+");
      await tick();
      log.push("reload-");
    });
    const second = req("a", "r2");
    const other = req("b", "b1");
    await Promise.all([first, reload, second, other]);
    expect(log.indexOf("reload+")).toBeGreaterThan(log.indexOf("r1-"));
    expect(log.indexOf("r2+")).toBeGreaterThan(log.indexOf("reload-"));
    expect(log.indexOf("b1+")).toBeLessThan(log.indexOf("reload+"));
  });
});
