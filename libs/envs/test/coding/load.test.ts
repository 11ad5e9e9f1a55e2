/** Dataset files: JSONL or gzipped JSONL, local or over http, every row validated by a schema. */
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  DATA_DIR,
  loadJsonl,
  loadJsonlSync,
  parseJsonl,
  readSourceText,
  readSourceTextSync,
  validateRows,
} from "../../src/coding/load.ts";

const Row = z.object({ id: z.string(), n: z.number() });
const dir = await mkdtemp(join(tmpdir(), "troupe-load-"));

describe("JSONL", () => {
  it("one value per non-blank line; a bad line is named by its number", () => {
    expect(parseJsonl('{"a":1}\n\n  \n[2]\n"x"\n', "f.jsonl")).toEqual([{ a: 1 }, [2], "x"]);
    expect(parseJsonl("", "f.jsonl")).toEqual([]);
    expect(() => parseJsonl('{"a":1}\n\n{oops\n', "f.jsonl")).toThrow(
      /^f\.jsonl: line 3 is not valid JSON \(/,
    );
  });

  it("rows are validated in order; an error names the row, its id and the field", () => {
    expect(validateRows([{ id: "a", n: 1 }], Row, "f")).toEqual([{ id: "a", n: 1 }]);
    const rows = [{ id: "a", n: 1 }, { id: "b", n: "2" }, null];
    expect(() => validateRows(rows, Row, "f.jsonl", "id")).toThrow(/^f\.jsonl: row 2 \(id "b"\): field n: /);
    expect(() => validateRows(rows, Row, "f.jsonl")).toThrow(/^f\.jsonl: row 2: field n: /);
    expect(() => validateRows([null], Row, "f.jsonl", "id")).toThrow(/^f\.jsonl: row 1: field \(root\): /);
  });
});

describe("sources", () => {
  it("gzip is told by its magic bytes, not by the file name", async () => {
    const text = '{"id":"a","n":1}\n';
    const plain = join(dir, "plain.jsonl.gz"); // a misleading name
    const gz = join(dir, "packed.txt");
    await writeFile(plain, text);
    await writeFile(gz, gzipSync(text));
    expect(await readSourceText(plain)).toBe(text);
    expect(await readSourceText(gz)).toBe(text);
    expect(readSourceTextSync(gz)).toBe(text);
    expect(await loadJsonl(gz, Row, "id")).toEqual([{ id: "a", n: 1 }]);
  });

  it("an http URL is fetched; a non-2xx status is an error naming it", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/rows.jsonl") res.end('{"id":"u","n":7}\n');
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    try {
      expect(await loadJsonl(`http://127.0.0.1:${port}/rows.jsonl`, Row)).toEqual([{ id: "u", n: 7 }]);
      expect(await loadJsonl(new URL(`http://127.0.0.1:${port}/rows.jsonl`), Row)).toHaveLength(1);
      await expect(readSourceText(`http://127.0.0.1:${port}/gone`)).rejects.toThrow(
        `fetching http://127.0.0.1:${port}/gone: HTTP 404`,
      );
    } finally {
      server.close();
    }
  });

  it("a shipped file read synchronously is read once per process", async () => {
    const path = join(dir, "once.jsonl");
    await writeFile(path, '{"id":"a","n":1}\n');
    const first = loadJsonlSync(path, Row, "id");
    await writeFile(path, '{"id":"b","n":2}\n');
    expect(loadJsonlSync(path, Row, "id")).toBe(first);
    expect(first).toEqual([{ id: "a", n: 1 }]);
    await writeFile(join(dir, "bad.jsonl"), '{"id":"a"}\n');
    expect(() => loadJsonlSync(join(dir, "bad.jsonl"), Row, "id")).toThrow(
      /bad\.jsonl: row 1 \(id "a"\): field n/,
    );
  });

  it("the shipped datasets live in libs/envs/data", () => {
    expect(DATA_DIR.endsWith(join("libs", "envs", "data"))).toBe(true);
  });
});
