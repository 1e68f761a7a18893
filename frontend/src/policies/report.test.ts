import { describe, expect, it } from "vitest";

import { bars, reportLoads } from "./report";

const figures = (attainment: number, cost: number, p50 = 100) => ({
  slo_attainment: attainment,
  cost_per_1k_requests: cost,
  prefix_hit_rate: 0.1,
  ttft_ms: { mean: p50, p50, p95: p50 * 2, p99: p50 * 3 },
  e2e_ms: { mean: 1, p50: 1, p95: 1, p99: 1 },
  requests: 150,
  served: 150,
  residency_violations: 0,
});

const REPORT = {
  candidate: "/var/artifacts/training-runs/3",
  baseline: "weighted-score",
  seeds: [0],
  loads: {
    "4": {
      policies: {
        "/var/artifacts/training-runs/3": figures(0.9, 0.8),
        "weighted-score": figures(0.7, 0.75),
        random: figures(0.4, 0.9),
        "kv-aware": figures(0.85, 0.7),
      },
      oracle: { slo_attainment: 0.97, ttft_ms: { mean: 50 }, servable: 150 },
      best_heuristic: "kv-aware",
    },
    "1": {
      policies: {
        "/var/artifacts/training-runs/3": figures(0.99, 0.8),
        "weighted-score": figures(0.99, 0.75),
        random: figures(0.9, 0.9),
      },
      oracle: { slo_attainment: 1.0 },
      best_heuristic: "weighted-score",
    },
  },
  verdict: {
    "4": { vs_baseline_points: 20, vs_best_heuristic_points: 5, cost_ratio_vs_baseline: 1.07 },
  },
};

describe("reportLoads", () => {
  const labels = { "/var/artifacts/training-runs/3": "ppo@run-3" };

  it("gives one view per load, in increasing load", () => {
    expect(reportLoads(REPORT, labels).map((v) => v.load)).toEqual(["1", "4"]);
  });

  it("orders candidate, baseline, best heuristic, then the rest, and marks them", () => {
    const view = reportLoads(REPORT, labels)[1]!;
    expect(view.rows.map((r) => [r.label, r.highlights])).toEqual([
      ["ppo@run-3", ["candidate"]],
      ["weighted-score", ["baseline"]],
      ["kv-aware", ["best-heuristic"]],
      ["random", []],
    ]);
    expect(view.oracleAttainment).toBe(0.97);
    expect(view.verdict).toEqual({
      vsBaselinePoints: 20,
      vsBestHeuristicPoints: 5,
      costRatioVsBaseline: 1.07,
    });
    expect(view.rows[0]!.ttft).toEqual({ p50: 100, p95: 200, p99: 300 });
  });

  it("lets one policy carry several highlights", () => {
    const view = reportLoads(REPORT, labels)[0]!;
    expect(view.rows[1]!.highlights).toEqual(["baseline", "best-heuristic"]);
    expect(view.verdict).toBeNull();
  });

  it("survives reports that are empty, partial or malformed", () => {
    expect(reportLoads(null)).toEqual([]);
    expect(reportLoads({})).toEqual([]);
    expect(reportLoads({ loads: { "1": { policies: { x: { slo_attainment: "high" } } } } }))
      .toEqual([
        { load: "1", rows: [], oracleAttainment: null, bestHeuristic: null, verdict: null },
      ]);
  });
});

describe("bars", () => {
  const rows = reportLoads(REPORT)[1]!.rows;

  it("scales to a fixed maximum (attainment out of 1)", () => {
    expect(bars(rows, (r) => r.attainment, { max: 1 }).map((b) => b.percent)).toEqual([
      90, 70, 85, 40,
    ]);
  });

  it("scales to the largest value by default (cost)", () => {
    const cost = bars(rows, (r) => r.costPer1k);
    expect(cost.find((b) => b.label === "random")!.percent).toBe(100);
    expect(cost[0]!.percent).toBeCloseTo((100 * 0.8) / 0.9);
  });

  it("draws nothing when every value is zero", () => {
    expect(bars(rows, () => 0).every((b) => b.percent === 0)).toBe(true);
  });
});
