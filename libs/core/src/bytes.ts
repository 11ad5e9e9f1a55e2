/**
 * Byte sizes as people write them: `2GiB`, `512 MiB`, `1.5GB`, or a plain number of bytes.
 * Binary units (KiB, MiB, GiB) are powers of 1024, decimal ones (kB, MB, GB) powers of 1000.
 */
import { z } from "zod";

const UNITS: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** Bytes from `2GiB`, `512 MiB`, `1.5GB` or a number; undefined when the text is not a size. */
export function parseBytes(value: string | number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  if (!m) return undefined;
  const unit = UNITS[(m[2] || "b").toLowerCase()];
  return unit === undefined ? undefined : Math.floor(Number(m[1]) * unit);
}

/** A byte size field: a number of bytes or a string with a unit, as bytes. */
export const ByteSizeSchema = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const bytes = parseBytes(value);
  if (bytes === undefined) {
    ctx.addIssue({
      code: "custom",
      message: `expected a size such as 2GiB or 512MiB, got ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  }
  return bytes;
});

/** `1.50 GiB`, `384 MiB`, `12 KiB`, `100 B`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  const digits = i === 0 || value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toFixed(digits)} ${units[i]}`;
}
