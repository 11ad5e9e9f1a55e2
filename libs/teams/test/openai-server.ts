/**
 * A real OpenAI-compatible server for the tests (node:http on 127.0.0.1, a free port), answering
 * /v1/completions in the vLLM dialect that @troupe/engine-openai speaks: token-id prompts,
 * `token_id:N` tokens, log-probs, usage.
 *
 * Its "model" plays Plan-Path's compact protocol perfectly but in two halves, so both roles matter:
 * it decodes the prompt (byte tokenizer, ChatML), finds A and G on the board, computes a shortest
 * path by BFS, and the planner answers only its first move while the fixer answers the rest.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ByteTokenizer } from "@troupe/engine";

const tokenizer = new ByteTokenizer();
const IM_END_ID = 258;

export interface ReceivedCompletion {
  readonly model: string;
  readonly prompt: number[];
  readonly seed: number;
  readonly temperature: number;
  readonly topP: number;
  readonly maxTokens: number;
  readonly authorization: string | undefined;
}

/** Shortest plan (U/D/L/R) from A to G on a board of `#`/`.` rows, BFS in U, D, L, R order. */
export function bfsPlan(board: readonly string[]): string {
  const find = (ch: string) => {
    const r = board.findIndex((row) => row.includes(ch));
    return [r, board[r]!.indexOf(ch)] as const;
  };
  const start = find("A");
  const goal = find("G");
  const moves = [
    ["U", -1, 0],
    ["D", 1, 0],
    ["L", 0, -1],
    ["R", 0, 1],
  ] as const;
  const from = new Map<string, [string, string]>([[`${start}`, ["", ""]]]);
  const queue = [start as readonly [number, number]];
  while (queue.length > 0) {
    const [r, c] = queue.shift()!;
    if (r === goal[0] && c === goal[1]) break;
    for (const [m, dr, dc] of moves) {
      const next = [r + dr, c + dc] as const;
      const cell = board[next[0]]?.[next[1]];
      if (cell === undefined || cell === "#" || from.has(`${next}`)) continue;
      from.set(`${next}`, [`${r},${c}`, m]);
      queue.push(next);
    }
  }
  let plan = "";
  for (let key = `${goal}`; key !== `${start}`; ) {
    const [prev, m] = from.get(key)!;
    plan = m + plan;
    key = prev;
  }
  return plan;
}

export class PlanPathServer {
  readonly requests: ReceivedCompletion[] = [];
  url = "";
  private readonly server: Server;

  private constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  static async start(): Promise<PlanPathServer> {
    const s = new PlanPathServer();
    await new Promise<void>((resolve) => s.server.listen(0, "127.0.0.1", resolve));
    s.url = `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`;
    return s;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = "";
    for await (const chunk of req) text += chunk;
    if (req.url !== "/v1/completions") return send(res, 404, { detail: "Not Found" });
    const body = JSON.parse(text);
    if (!String(body.model).endsWith("-planner") && !String(body.model).endsWith("-fixer")) {
      return send(res, 404, { error: { message: `The model \`${body.model}\` does not exist.`, code: 404 } });
    }
    this.requests.push({
      model: body.model,
      prompt: body.prompt,
      seed: body.seed,
      temperature: body.temperature,
      topP: body.top_p,
      maxTokens: body.max_tokens,
      authorization: req.headers.authorization,
    });
    const prompt = tokenizer.decode(body.prompt);
    const content = /<\|im_start\|>user\n([\s\S]*?)<\|im_end\|>/.exec(prompt)![1]!;
    const lines = content.split("\n");
    const board = lines.slice(1).filter((l) => /^[.#AG]+$/.test(l));
    const plan = bfsPlan(board);
    const answer = lines[0] === "path planner" ? plan.slice(0, 1) : plan;
    const full = [...tokenizer.encode(answer), IM_END_ID];
    const ids = full.slice(0, body.max_tokens);
    send(res, 200, {
      id: "cmpl-planpath",
      object: "text_completion",
      model: body.model,
      choices: [
        {
          index: 0,
          text: tokenizer.decode(ids, { skipSpecialTokens: true }),
          finish_reason: ids.length === full.length ? "stop" : "length",
          logprobs: {
            tokens: ids.map((id) => `token_id:${id}`),
            token_logprobs: ids.map(() => -0.5),
            top_logprobs: null,
            text_offset: [],
          },
        },
      ],
      usage: {
        prompt_tokens: body.prompt.length,
        completion_tokens: ids.length,
        total_tokens: body.prompt.length + ids.length,
      },
    });
  }
}

function send(res: ServerResponse, status: number, json: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(json));
}
