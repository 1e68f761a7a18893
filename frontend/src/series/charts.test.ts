import { describe, expect, it } from "vitest";

import type { FleetSeries } from "../api/types";
import { FLEET_SYNC, fleetCharts } from "./charts";

const DATA: FleetSeries = {
  from: "2026-11-24T12:00:00Z",
  to: "2026-11-24T12:03:00Z",
  step: 60,
  t: [0, 60, 120],
  decisions_per_s: [0.05, 0, 0.02],
  latency_us_mean: [200, null, 50],
  latency_us_max: [300, null, 50],
  fallbacks: [1, 0, 0],
  breaker_trips: [0, 2, 0],
  prefix_hit_rate: [null, 0.4, 0.5],
  slos: [
    {
      slo: "interactive",
      objective: 0.95,
      ttft_p95_ms: 800,
      e2e_p95_ms: 15000,
      outcomes: [3, 0, 0],
      attainment: [0.66, null, null],
      burn_rate: [6.8, null, null],
    },
  ],
  marks: [{ t: 60, kind: "canary", policy: "ppo@1", actor: "admin", reason: "try" }],
  events: [
    { t: 30, kind: "drain", subject: "fra-h100-1", text: "drain fra-h100-1 by otto: NVLink" },
    { t: 90, kind: "breaker", subject: "muc-l4-1", text: "breaker muc-l4-1: closed → open (3)" },
    { t: 100, kind: "breaker", subject: "muc-l4-1", text: "breaker muc-l4-1: half_open → closed (ok)" },
    { t: 120, kind: "breach_open", subject: "interactive", text: "page breach #3 of interactive opened" },
  ],
};

describe("fleet charts", () => {
  const charts = Object.fromEntries(fleetCharts(DATA).map((c) => [c.key, c]));

  it("draws latency on a log scale and the rest linearly", () => {
    expect(charts.latency!.log).toBe(true);
    expect(Object.values(charts).filter((c) => c.log)).toHaveLength(1);
  });

  it("keeps gaps as null and marks every chart with rollout moves and fleet events", () => {
    expect(charts.latency!.lines[0]!.values).toEqual([200, null, 50]);
    for (const chart of Object.values(charts)) {
      expect(chart.marks).toEqual([
        { t: 30, label: "drain fra-h100-1", tone: "warn" },
        { t: 60, label: "canary ppo@1", tone: "info" },
        { t: 90, label: "breaker muc-l4-1", tone: "bad" },
        { t: 100, label: "breaker muc-l4-1", tone: "ok" },
        { t: 120, label: "breach open interactive", tone: "bad" },
      ]);
    }
  });

  it("shares one cursor across the fleet's charts", () => {
    expect(new Set(Object.values(charts).map((c) => c.syncKey))).toEqual(new Set([FLEET_SYNC]));
  });

  it("draws each SLO's objective and the budget pace as thresholds", () => {
    expect(charts.attainment!.lines.map((l) => l.label)).toEqual(["interactive"]);
    expect(charts.attainment!.thresholds).toEqual([{ value: 0.95, label: "objective 95%" }]);
    expect(charts.burn!.thresholds).toEqual([{ value: 1, label: "1× budget pace" }]);
  });

  it("labels axes compactly", () => {
    expect(charts.latency!.format!(250)).toBe("250 µs");
    expect(charts.latency!.format!(12_500)).toBe("13 ms");
    expect(charts.attainment!.format!(0.955)).toBe("96%");
  });
});
