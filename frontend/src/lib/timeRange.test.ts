import { describe, expect, it } from "vitest";

import { DEFAULT_RANGE, parseRange, rangeWindow } from "./timeRange";

describe("time range", () => {
  it("reads a known key from the URL and falls back to the default", () => {
    expect(parseRange("6h").seconds).toBe(6 * 3600);
    expect(parseRange("7d").key).toBe("7d");
    expect(parseRange("1y")).toBe(DEFAULT_RANGE);
    expect(parseRange(null)).toBe(DEFAULT_RANGE);
  });

  it("ends the window now and starts it one range earlier", () => {
    const now = Date.UTC(2026, 10, 24, 12, 0, 0);
    expect(rangeWindow(parseRange("15m"), now)).toEqual({
      from: "2026-11-24T11:45:00.000Z",
      to: "2026-11-24T12:00:00.000Z",
    });
  });
});
