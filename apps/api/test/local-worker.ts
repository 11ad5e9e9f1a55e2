/**
 * Starts a Worker build (a wrangler config) in local workerd on 127.0.0.1, with plain-text vars,
 * its local R2 state kept in `persist`: what the Worker tests share.
 */
import { unstable_startWorker } from "wrangler";

export type LocalWorker = Awaited<ReturnType<typeof unstable_startWorker>>;

export function startLocalWorker(
  config: string,
  persist: string,
  vars: Record<string, string>,
): Promise<LocalWorker> {
  return unstable_startWorker({
    config,
    bindings: Object.fromEntries(
      Object.entries(vars).map(([name, value]) => [name, { type: "plain_text" as const, value }]),
    ),
    dev: {
      persist,
      server: { hostname: "127.0.0.1", port: 0 },
      inspector: false,
      watch: false,
      liveReload: false,
      logLevel: "error",
    },
  });
}
