/**
 * The sandbox service's process (service.ts forks it): makes a `Sandbox` with the options in its
 * first argument, says `ready` (or `unavailable` with the reason), then runs what its parent sends
 * and answers over the IPC channel. It exits when the parent goes away.
 */
import { createSandbox, SandboxUnavailableError } from "./sandbox.ts";
import type { ServiceReply, ServiceRequest } from "./service.ts";
import type { LiveRun } from "./types.ts";

const reply = (message: ServiceReply) => process.send?.(message);
const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** A connected run in progress: its live runs, and how to tell the sandbox the parent is done talking. */
interface Conversation {
  readonly runs: readonly LiveRun[];
  readonly talked: () => void;
}
const conversations = new Map<number, Conversation>();

async function main(): Promise<void> {
  process.on("disconnect", () => process.exit(0)); // the parent is gone: so are we
  let sandbox: Awaited<ReturnType<typeof createSandbox>>;
  try {
    sandbox = await createSandbox(JSON.parse(process.argv[2] ?? "{}"));
  } catch (error) {
    if (error instanceof SandboxUnavailableError) reply({ op: "unavailable", reason: error.reason });
    else reply({ op: "unavailable", reason: messageOf(error) });
    return;
  }
  reply({ op: "ready", isolation: sandbox.isolation });

  process.on("message", (message: ServiceRequest) => {
    const { id } = message;
    switch (message.op) {
      case "run":
        sandbox.run(message.request).then(
          (result) => reply({ op: "result", id, result }),
          (error: unknown) => reply({ op: "error", id, message: messageOf(error) }),
        );
        return;
      case "connect":
        sandbox
          .runConnected(message.requests, (runs) => {
            runs.forEach((run, index) => {
              run.onData((chunk) => reply({ op: "data", id, run: index, chunk }));
              void run.done.then((result) => reply({ op: "done", id, run: index, result }));
            });
            return new Promise<void>((talked) => {
              conversations.set(id, { runs, talked });
              reply({ op: "started", id });
            });
          })
          .then(
            ({ results }) => reply({ op: "results", id, results }),
            (error: unknown) => reply({ op: "error", id, message: messageOf(error) }),
          )
          .finally(() => conversations.delete(id));
        return;
      case "send":
        conversations.get(id)?.runs[message.run]?.send(message.data);
        return;
      case "end":
        conversations.get(id)?.runs[message.run]?.end();
        return;
      case "kill":
        conversations.get(id)?.runs[message.run]?.kill();
        return;
      case "talked":
        conversations.get(id)?.talked();
        return;
    }
  });
}

void main();
