import { describe, expect, it } from "vitest";

import { contributionText, featureLabel, marginText, type LearnedWhy } from "./learned";

describe("learned explanations", () => {
  it("names features plainly", () => {
    expect(featureLabel("queue_per_slot")).toBe("queue per batch slot");
    expect(featureLabel("tier_edge")).toBe("tier: edge");
    expect(featureLabel("unknown_feature")).toBe("unknown_feature");
  });

  it("says which way a feature pushed", () => {
    expect(contributionText(1.234)).toBe("pick +1.23");
    expect(contributionText(-0.4)).toBe("runner-up −0.40");
  });

  it("splits the margin into the network's and the cost price's parts", () => {
    const why = { runner_up: "a100", margin: 4.06, scorer_margin: 4.5, cost_term: -0.44 } as LearnedWhy;
    expect(marginText(why)).toBe("Score margin over a100: 4.06 (the scorer's network 4.50; the cost price adds −0.44).");
    expect(marginText({ ...why, cost_term: 0, scorer_margin: 4.06 })).toBe(
      "Score margin over a100: 4.06 (the scorer's network 4.06).",
    );
  });
});
