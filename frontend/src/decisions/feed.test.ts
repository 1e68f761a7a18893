import { describe, expect, it } from "vitest";

import type { DecisionRecord } from "../api/types";
import {
  addRecorded,
  addSamples,
  addSummary,
  aggregate,
  emptyFeed,
  matches,
  MAX_ROWS,
  NO_FILTERS,
  optionsOf,
  placementText,
  rates,
  sampleFromEvent,
  sampleFromRecord,
  setPaused,
  summaryFromEvent,
  type SampledDecision,
} from "./feed";

const T0 = 1_700_000_000_000;

function sample(i: number, over: Partial<SampledDecision> = {}): SampledDecision {
  return {
    decision_id: `d${i}`,
    ts: new Date(T0 + i).toISOString(),
    node: i % 2 ? "fra-h100-1" : "muc-l4-1",
    site: null,
    model: "llama-3.1-8b",
    slo: "interactive",
    policy: "weighted-score@builtin",
    arm: "active",
    fallbacks: [],
    latency_us: 120,
    prefill_node: null,
    probe: null,
    ...over,
  };
}

function summary(at: number, total: number, sampled = Math.min(total, 20)) {
  return summaryFromEvent(
    {
      type: "decision.summary",
      window_s: 1,
      total,
      sampled,
      by_node: { "muc-l4-1": total - 1, "fra-h100-1": 1 },
      by_policy: { "weighted-score@builtin": total },
    },
    at,
  );
}

describe("the sample list", () => {
  it("keeps at most MAX_ROWS rows, newest first, whatever the rate", () => {
    let state = emptyFeed(T0);
    for (let burst = 0; burst < 50; burst++) {
      state = addSamples(state, Array.from({ length: 20 }, (_, i) => sample(burst * 20 + i)));
    }
    expect(state.rows).toHaveLength(MAX_ROWS);
    expect(state.rows[0]!.decision_id).toBe("d999");
    expect(state.rows.at(-1)!.decision_id).toBe(`d${1000 - MAX_ROWS}`);
  });

  it("holds samples while paused, bounded, and shows them on resume", () => {
    let state = addSamples(emptyFeed(T0), [sample(1)]);
    state = setPaused(state, true);
    for (let i = 2; i < 1000; i++) state = addSamples(state, [sample(i)]);
    expect(state.rows.map((r) => r.decision_id)).toEqual(["d1"]);
    expect(state.held).toHaveLength(MAX_ROWS);
    state = setPaused(state, false);
    expect(state.held).toHaveLength(0);
    expect(state.rows).toHaveLength(MAX_ROWS);
    expect(state.rows[0]!.decision_id).toBe("d999");
  });

  it("puts recorded rows after live ones without duplicates", () => {
    let state = addSamples(emptyFeed(T0), [sample(5)]);
    state = addRecorded(state, [{ ...sample(5), recorded: true }, { ...sample(4), recorded: true }]);
    expect(state.rows.map((r) => [r.decision_id, r.recorded ?? false])).toEqual([
      ["d5", false],
      ["d4", true],
    ]);
  });

  it("merges rows recorded while the stream was down between older and newer ones", () => {
    let state = addRecorded(emptyFeed(T0), [sample(1, { recorded: true })]);
    state = addSamples(state, [sample(9)]);
    state = addRecorded(state, [sample(9), sample(5), sample(1)].map((r) => ({ ...r, recorded: true })));
    expect(state.rows.map((r) => r.decision_id)).toEqual(["d9", "d5", "d1"]);
  });

  it("parses a decision event and ignores malformed ones", () => {
    const row = sampleFromEvent({
      type: "decision",
      decision_id: "abc",
      model: "m",
      node: "n",
      site: "s",
      slo: null,
      policy: "p@1",
      fallbacks: ["x"],
      latency_us: 99.5,
      ts: "2025-01-01T00:00:00Z",
    });
    expect(row).toMatchObject({ decision_id: "abc", arm: "active", fallbacks: ["x"], slo: null });
    // An older server's event has neither key: an ordinary decision.
    expect(row).toMatchObject({ prefill_node: null, probe: null });
    expect(sampleFromEvent({ type: "decision", model: "m" })).toBeNull();
  });

  it("reads a split decision's prefill node and a probe's id from the event", () => {
    const event = { type: "decision", decision_id: "s", model: "m", node: "core-d", policy: "p@1" };
    expect(sampleFromEvent({ ...event, prefill_node: "core-p", probe: null })).toMatchObject({
      node: "core-d",
      prefill_node: "core-p",
      probe: null,
    });
    expect(sampleFromEvent({ ...event, prefill_node: null, probe: 7 })).toMatchObject({
      prefill_node: null,
      probe: 7,
    });
  });

  it("reads the same from a record of the log, whose unsplit prefill node is empty", () => {
    const record = {
      id: "r",
      created_at: "2025-01-01T00:00:00Z",
      node: "core-d",
      node_site: "b-core",
      model: "m",
      slo: "",
      policy_name: "weighted-score",
      policy_version: "builtin",
      fallbacks: [],
      latency_us: 80,
    };
    const split = sampleFromRecord({ ...record, prefill_node: "core-p", probe: 3 } as DecisionRecord);
    expect(split).toMatchObject({ prefill_node: "core-p", probe: 3, recorded: true });
    const plain = sampleFromRecord({ ...record, prefill_node: "", probe: null } as DecisionRecord);
    expect(plain).toMatchObject({ prefill_node: null, probe: null });
  });

  it("shows a split decision as prefill → decode, others by their node", () => {
    expect(placementText({ node: "core-d", prefill_node: "core-p" })).toBe("core-p → core-d");
    expect(placementText({ node: "core-d", prefill_node: null })).toBe("core-d");
    expect(placementText({ node: null, prefill_node: null })).toBe("none");
  });

  it("lets the node filter find a split decision by either of its nodes", () => {
    const row = sample(1, { node: "core-d", prefill_node: "core-p" });
    expect(matches(row, { ...NO_FILTERS, node: "core-p" })).toBe(true);
    expect(matches(row, { ...NO_FILTERS, node: "core-d" })).toBe(true);
    expect(matches(row, { ...NO_FILTERS, node: "edge-m" })).toBe(false);
    expect(optionsOf([row], "node")).toEqual(["core-d", "core-p"]);
  });

  it("filters on node, model, policy and arm", () => {
    const row = sample(1, { arm: "canary" });
    expect(matches(row, NO_FILTERS)).toBe(true);
    expect(matches(row, { ...NO_FILTERS, node: "fra-h100-1", arm: "canary" })).toBe(true);
    expect(matches(row, { ...NO_FILTERS, arm: "active" })).toBe(false);
    expect(matches(row, { ...NO_FILTERS, policy: "other@1" })).toBe(false);
    expect(matches(row, { ...NO_FILTERS, model: "other" })).toBe(false);
  });
});

describe("the summaries", () => {
  it("give the true rate and the sampled rate over the last seconds", () => {
    let state = emptyFeed(T0);
    for (let s = 1; s <= 30; s++) state = addSummary(state, summary(T0 + s * 1000, 5000));
    const now = T0 + 30_000;
    expect(rates(state, now).decisionsPerS).toBeCloseTo(5000);
    expect(rates(state, now).sampledPerS).toBeCloseTo(20);
  });

  it("decay to zero when the fleet goes quiet (no summaries are sent for idle seconds)", () => {
    let state = addSummary(emptyFeed(T0), summary(T0 + 1000, 100));
    expect(rates(state, T0 + 60_000).decisionsPerS).toBe(0);
  });

  it("divide by the time seen when the page has been open less than the rate window", () => {
    const state = addSummary(emptyFeed(T0), summary(T0 + 1000, 100));
    expect(rates(state, T0 + 2000).decisionsPerS).toBeCloseTo(50);
  });

  it("aggregate per node and per policy over a bounded window", () => {
    let state = emptyFeed(T0);
    for (let s = 1; s <= 600; s++) state = addSummary(state, summary(T0 + s * 1000, 10));
    expect(state.summaries.length).toBeLessThanOrEqual(61);
    const agg = aggregate(state, T0 + 600_000);
    expect(agg.seconds).toBe(60);
    expect(agg.total).toBe(10 * state.summaries.length);
    expect(agg.byNode[0]).toEqual(["muc-l4-1", 9 * state.summaries.length]);
    expect(agg.byPolicy).toEqual([["weighted-score@builtin", agg.total]]);
  });
});
