import { describe, expect, it } from "vitest";

import type { PolicyVersion, Rollout } from "../api/types";
import { attainmentGap, elapsed, estimatedCost, headlineCost, parseNumbers, versionInRollout, watchdogLine } from "./rollout";

const cost = {
  headline: "attributed_usd_per_1k" as const,
  canary_usd_per_1k: 2.1,
  active_usd_per_1k: 2.2,
  canary_vs_active: 0.954,
  estimated_canary_vs_active: 1.09,
};

describe("attainmentGap", () => {
  it("shows the difference in points with its interval", () => {
    expect(
      attainmentGap({ slo_attainment_difference: -0.0025, slo_attainment_difference_95: [-0.0131, 0.008] }),
    ).toBe("canary − active −0.25 pt (95%: −1.31 to +0.80)");
  });

  it("is empty before both arms have outcomes", () => {
    expect(attainmentGap(undefined)).toBe("");
  });
});

describe("costs", () => {
  it("heads with the attributed cost and its ratio to the active arm", () => {
    expect(headlineCost(cost)).toBe("$2.100 / 1k served (attributed) · 0.95× active");
    expect(estimatedCost(cost)).toBe("estimate at decision time: 1.09× active");
  });

  it("says when nothing could be attributed", () => {
    expect(headlineCost({ ...cost, canary_usd_per_1k: null })).toBe("no served request attributed yet");
    expect(estimatedCost({ ...cost, estimated_canary_vs_active: null })).toBe("");
  });
});

describe("elapsed and the watchdog", () => {
  it("reads an elapsed time", () => {
    expect(elapsed(42)).toBe("42 s");
    expect(elapsed(725)).toBe("12 min 5 s");
    expect(elapsed(3 * 3600 + 120)).toBe("3 h 2 min");
  });

  it("says when the watchdog checks next", () => {
    const watchdog = {
      state: "healthy" as const, said: "", period_s: 30, last_check_at: "2026-01-01T00:00:00Z",
      last_said: "", next_check_at: "2026-01-01T00:00:30Z", window_s: 900, min_outcomes: 100,
    };
    expect(watchdogLine(watchdog, Date.parse("2026-01-01T00:00:18Z"))).toBe("healthy · next check in 12 s");
    expect(watchdogLine({ ...watchdog, state: "waiting", next_check_at: null }, 0)).toBe(
      "waiting for outcomes · checks every 30 s (no check of this canary seen yet)",
    );
  });
});

describe("versionInRollout", () => {
  const versions = [
    { id: 1, name: "weighted-score", version: "v1" },
    { id: 2, name: "generalist", version: "v2" },
  ] as PolicyVersion[];
  const rollout = { active: "weighted-score@v1", shadow: null, canary: "generalist@v2" } as Rollout;

  it("is the canary, not the first version", () => {
    expect(versionInRollout(rollout, versions)?.id).toBe(2);
    expect(versionInRollout({ ...rollout, canary: null }, versions)).toBeNull();
  });
});

describe("parseNumbers", () => {
  it("reads seeds and loads typed with commas or spaces", () => {
    expect(parseNumbers("0, 1 2")).toEqual([0, 1, 2]);
    expect(parseNumbers("1,x")).toBeNull();
    expect(parseNumbers(" ")).toBeNull();
  });
});
