import { describe, expect, it } from "vitest";
import { ByteSizeSchema, formatBytes, parseBytes } from "../src/bytes.ts";

describe("byte sizes", () => {
  it("parses binary and decimal units and plain numbers", () => {
    expect(parseBytes("2GiB")).toBe(2 * 2 ** 30);
    expect(parseBytes("512 MiB")).toBe(512 * 2 ** 20);
    expect(parseBytes("1.5GB")).toBe(1_500_000_000);
    expect(parseBytes("64kib")).toBe(65536);
    expect(parseBytes("100")).toBe(100);
    expect(parseBytes(4096)).toBe(4096);
    expect(parseBytes("lots")).toBeUndefined();
    expect(parseBytes("2 parsecs")).toBeUndefined();
    expect(parseBytes(-1)).toBeUndefined();
  });

  it("formats with the largest binary unit", () => {
    expect(formatBytes(100)).toBe("100 B");
    expect(formatBytes(12 * 1024)).toBe("12.0 KiB");
    expect(formatBytes(384 * 2 ** 20)).toBe("384 MiB");
    expect(formatBytes(1.5 * 2 ** 30)).toBe("1.50 GiB");
  });

  it("checks a recipe field with one message", () => {
    expect(ByteSizeSchema.parse("2GiB")).toBe(2 ** 31);
    const result = ByteSizeSchema.safeParse("lots");
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toBe('expected a size such as 2GiB or 512MiB, got "lots"');
  });
});
