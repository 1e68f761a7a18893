import { describe, expect, it } from "vitest";

import { alignSeries } from "./alignSeries";

describe("alignSeries", () => {
  it("puts every series on the union of timestamps, with gaps as null", () => {
    const a: [string, number][] = [
      ["2026-01-01T00:00:10Z", 1],
      ["2026-01-01T00:00:00Z", 0],
    ];
    const b: [string, number][] = [["2026-01-01T00:00:05Z", 5]];
    const t0 = Date.parse("2026-01-01T00:00:00Z") / 1000;
    expect(alignSeries([a, b])).toEqual([
      [t0, t0 + 5, t0 + 10],
      [0, null, 1],
      [null, 5, null],
    ]);
  });

  it("handles no series and empty series", () => {
    expect(alignSeries([])).toEqual([[]]);
    expect(alignSeries([[]])).toEqual([[], []]);
  });
});
