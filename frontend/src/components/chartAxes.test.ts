import { describe, expect, it } from "vitest";

import { decadeLabels, timeTicks } from "./chartAxes";

describe("chart axes", () => {
  it("labels time ticks in 24-hour UTC, with the day once the axis spans days", () => {
    const t = Date.UTC(2026, 10, 24, 15, 20) / 1000;
    expect(timeTicks([t, t + 300])).toEqual(["15:20", "15:25"]);
    expect(timeTicks([t, t + 2 * 86_400])).toEqual(["Nov 24 15:20", "Nov 26 15:20"]);
  });

  it("labels only the decades of a log axis", () => {
    expect(decadeLabels(String, [100, 200, 500, 1000, 3000, 10_000])).toEqual([
      "100", "", "", "1000", "", "10000",
    ]);
  });
});
