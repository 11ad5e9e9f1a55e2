/**
 * One route module served on its own, as createApp mounts it: an OpenAPIHono with the app's one
 * onError (errors.ts), so a route's thrown ApiError becomes its documented answer; the log lines
 * are kept for the test to read.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { FileStore } from "@troupe/storage/node";
import { createTeamRegistry, type TeamManifest, type TeamRegistry } from "@troupe/teams";
import { afterAll, beforeAll } from "vitest";
import type { LogLevel } from "../../src/context.ts";
import { errorHandler } from "../../src/errors.ts";
import { tempStore, tinyTeam } from "../fixtures.ts";

export function mounted(routes: OpenAPIHono) {
  const logged: { level: LogLevel; message: string; fields?: Record<string, unknown> }[] = [];
  const app = new OpenAPIHono();
  app.onError(
    errorHandler({
      bodyBytes: 4096,
      log: (level, message, fields) => logged.push({ level, message, ...(fields ? { fields } : {}) }),
    }),
  );
  app.route("/", routes);
  return { app, logged };
}

/**
 * A real registry in a temp FileStore, set up before the file's tests and removed after: team
 * "tiny" published twice (v1, v2) with alias "stable" → 1, then whatever `more` publishes. The
 * fields are filled in by the file's beforeAll, so read them inside tests.
 */
export function tinyRegistry(more: (registry: TeamRegistry) => Promise<unknown> = async () => {}) {
  const tmp = tempStore();
  const published = { store: tmp.store } as {
    store: FileStore;
    registry: TeamRegistry;
    v1: TeamManifest;
    v2: TeamManifest;
  };
  beforeAll(async () => {
    published.registry = createTeamRegistry(tmp.store);
    published.v1 = await published.registry.publish(await tinyTeam("tiny"));
    published.v2 = await published.registry.publish(await tinyTeam("tiny"));
    await published.registry.setAlias("tiny", "stable", 1);
    await more(published.registry);
  }, 60_000);
  afterAll(() => tmp.cleanup());
  return published;
}
