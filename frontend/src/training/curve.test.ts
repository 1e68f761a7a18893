import { describe, expect, it } from "vitest";

import { learningCurve } from "./curve";

describe("learningCurve", () => {
  it("takes validations by step and the baselines", () => {
    const curve = learningCurve([
      { phase: "baselines", teacher_attainment: 0.9, best_heuristic: "prefix-aware", best_heuristic_attainment: 0.85 },
      { phase: "ppo", timesteps: 2048, approx_kl: 0.01 },
      { phase: "ppo", event: "validation", timesteps: 40000, slo_attainment: 0.88, teacher_attainment: 0.9, best_heuristic_attainment: 0.85 },
      { phase: "imitate", event: "validation", timesteps: 0, slo_attainment: 0.8 },
      { phase: "ppo", event: "validation", timesteps: 20000, slo_attainment: 0.86 },
    ]);
    expect(curve.steps).toEqual([0, 20000, 40000]);
    expect(curve.policy).toEqual([0.8, 0.86, 0.88]);
    expect(curve.teacher).toBe(0.9);
    expect(curve.bestHeuristic).toBe(0.85);
    expect(curve.bestHeuristicName).toBe("prefix-aware");
  });

  it("skips malformed records and copes with no metrics", () => {
    expect(learningCurve(null).steps).toEqual([]);
    const curve = learningCurve([1, "x", { event: "validation", timesteps: "5", slo_attainment: 0.5 }, { event: "validation", timesteps: 5, slo_attainment: Number.NaN }]);
    expect(curve.steps).toEqual([]);
    expect(curve.teacher).toBeNull();
  });
});
