import { describe, expect, it } from "vitest";

import { armCost, attainmentGap } from "./rollout";

const arm = { outcomes: 10, slo_attainment: 0.9, breached_groups: 0, groups: 1 };

describe("armCost", () => {
  it("shows the estimated and the attributed cost per 1k requests", () => {
    expect(armCost({ ...arm, estimated_usd_per_1k: 2.3456, attributed_usd_per_1k: 2.1 })).toBe(
      " · $2.346 / 1k est. · $2.100 / 1k attributed",
    );
  });

  it("leaves out what the API has not got", () => {
    expect(armCost({ ...arm, estimated_usd_per_1k: 2, attributed_usd_per_1k: null })).toBe(" · $2.000 / 1k est.");
    expect(armCost({ ...arm, estimated_usd_per_1k: null })).toBe("");
  });
});

describe("attainmentGap", () => {
  it("shows the difference in points with its interval", () => {
    expect(
      attainmentGap({ slo_attainment_difference: -0.0025, slo_attainment_difference_95: [-0.0131, 0.008] }),
    ).toBe(" · canary − active −0.25 pt (95%: −1.31 to +0.80)");
  });

  it("is empty before both arms have outcomes", () => {
    expect(attainmentGap(undefined)).toBe("");
  });
});
