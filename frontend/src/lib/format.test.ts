import { describe, expect, it } from "vitest";

import { duration, percent, rate, timestamp } from "./format";

describe("formats", () => {
  it("formats durations by magnitude", () => {
    expect(duration(850.4)).toBe("850 ms");
    expect(duration(1234)).toBe("1.23 s");
    expect(duration(12_345)).toBe("12.3 s");
    expect(duration(306_000)).toBe("5.1 min");
    expect(duration(null)).toBe("—");
  });

  it("formats fractions as percentages and rates by size", () => {
    expect(percent(0.9234)).toBe("92.3%");
    expect(percent(undefined)).toBe("—");
    expect(rate(1234.5)).toBe("1235");
    expect(rate(12.34)).toBe("12.3");
    expect(rate(0.5)).toBe("0.50");
  });

  it("writes every time one way, in UTC, with the zone", () => {
    expect(timestamp("2026-11-24T15:06:36.512Z")).toBe("Nov 24 15:06:36 UTC");
    expect(timestamp("2026-11-24T16:06:36+01:00")).toBe("Nov 24 15:06:36 UTC");
    expect(timestamp(Date.UTC(2026, 0, 2, 0, 0, 5))).toBe("Jan 2 00:00:05 UTC");
    expect(timestamp(null)).toBe("—");
    expect(timestamp("not a time")).toBe("—");
  });
});
