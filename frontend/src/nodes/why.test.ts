import { describe, expect, it } from "vitest";

import { breakerLine, outcomeWord, runnerUpLine, verdict, type NodeWhy } from "./why";

const HEALTHY: NodeWhy = {
  node: "fra-h100-1",
  state: "active",
  reasons: [],
  breaches: [],
  breaker: { state: "closed", last_change: null },
  telemetry: { updated_at: "2026-03-01T12:00:00Z", age_s: 3, stale_after_s: 30, stale: false },
  state_changes: [],
  outcomes: { window_s: 900, decisions: 10, outcomes: 9, failed: 0, slo_missed: 0, picked_in_breach: 0 },
  recent_decisions: [],
};

describe("the node page's why", () => {
  it("says nothing is wrong with no reasons", () => {
    expect(verdict(HEALTHY)).toEqual({ level: "ok", text: expect.stringMatching(/^Nothing wrong/) });
  });

  it("leads with the worst reason and counts the rest", () => {
    const red: NodeWhy = {
      ...HEALTHY,
      reasons: [
        { kind: "breach", level: "bad", text: "In an open page breach of interactive (#4)." },
        { kind: "stale", level: "warn", text: "Its telemetry is 95 s old." },
      ],
    };
    expect(verdict(red)).toEqual({ level: "bad", text: "In an open page breach of interactive (#4). (+1 more)" });
  });

  it("words outcomes", () => {
    expect(outcomeWord({ ok: null, slo_met: null })).toBe("pending");
    expect(outcomeWord({ ok: false, slo_met: false })).toBe("failed");
    expect(outcomeWord({ ok: true, slo_met: false })).toBe("missed SLO");
    expect(outcomeWord({ ok: true, slo_met: true })).toBe("met");
  });

  it("describes the breaker with its last move", () => {
    const tripped: NodeWhy = {
      ...HEALTHY,
      breaker: {
        state: "half_open",
        last_change: { from_state: "closed", to_state: "open", reason: "3 failures", at: "2026-03-01T12:00:00Z" },
      },
    };
    expect(breakerLine(tripped, () => "12:00")).toBe("half-open · last move closed → open at 12:00 (3 failures)");
    expect(breakerLine(HEALTHY, () => "")).toBe("closed");
  });
});

describe("runnerUpLine", () => {
  it("names the runner-up, the worse estimates and the feature that moved the pick most", () => {
    expect(runnerUpLine({ runner_up: "a100", worse: ["ttft_ms", "e2e_ms"], top_feature: "queue_per_slot" })).toBe(
      "over a100 · worse est. TTFT, E2E · moved most by queue_per_slot",
    );
    expect(runnerUpLine({ runner_up: "a100", worse: [], top_feature: null })).toBe("over a100");
    expect(runnerUpLine(null)).toBe("—");
  });
});
