/**
 * Token ids from a server's answer.
 *
 * vLLM started with `return_tokens_as_token_ids: true` (request field, or server flag
 * `--return-tokens-as-token-ids`) spells every token of the logprobs as `token_id:<id>`, because
 * token strings are lossy (a byte-level token that is half a UTF-8 character decodes to U+FFFD, two
 * ids can decode alike). Those are parsed here, all or nothing.
 */

const TOKEN_ID = /^token_id:(\d+)$/;

/** The ids of tokens spelled `token_id:N`; undefined when any token is spelled otherwise. */
export function parseTokenIdTokens(tokens: readonly string[]): number[] | undefined {
  const ids: number[] = [];
  for (const token of tokens) {
    const match = TOKEN_ID.exec(token);
    if (match === null) return undefined;
    ids.push(Number(match[1]));
  }
  return ids;
}
