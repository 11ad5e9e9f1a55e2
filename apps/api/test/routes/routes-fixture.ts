/**
 * One route module served on its own, as createApp mounts it: an OpenAPIHono with the app's one
 * onError (errors.ts), so a route's thrown ApiError becomes its documented answer; the log lines
 * are kept for the test to read.
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { LogLevel } from "../../src/context.ts";
import { errorHandler } from "../../src/errors.ts";

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
