import { describe, expect, it } from "vitest";

import type { LatestTelemetry } from "../api/types";
import { breachesByNode, nodeHealth } from "./health";

const fresh: LatestTelemetry = {
  updated_at: "2026-11-24T12:00:00Z",
  age_s: 3,
  stale: false,
  queue_depth: 0,
  running: 2,
  kv_usage: 0.4,
  gpu_util: 0.5,
  ttft_p95_s: 0.3,
  prefix_hit_rate: 0.2,
};

describe("node health", () => {
  it("is ok for an active node with fresh, calm telemetry", () => {
    expect(nodeHealth({ state: "active", telemetry: fresh, breaker: "closed", openBreaches: 0 }))
      .toEqual({ level: "ok", reasons: [] });
  });

  it("lets the worst condition set the colour and lists them all", () => {
    const h = nodeHealth({
      state: "draining",
      telemetry: { ...fresh, stale: true, age_s: 95.4 },
      breaker: "closed",
      openBreaches: 2,
    });
    expect(h.level).toBe("bad");
    expect(h.reasons).toEqual(["2 open breaches", "draining", "telemetry stale (95 s)"]);
  });

  it("ranks down over an open breaker, and drained over staleness", () => {
    expect(nodeHealth({ state: "down", telemetry: fresh, breaker: "open", openBreaches: 0 }).level)
      .toBe("down");
    expect(nodeHealth({ state: "cordoned", telemetry: undefined, breaker: undefined, openBreaches: 0 }))
      .toEqual({ level: "out", reasons: ["cordoned", "no telemetry"] });
  });

  it("warns on a nearly full KV cache and a half-open breaker", () => {
    const h = nodeHealth({
      state: "active",
      telemetry: { ...fresh, kv_usage: 0.93 },
      breaker: "half_open",
      openBreaches: 0,
    });
    expect(h).toEqual({ level: "warn", reasons: ["breaker half-open", "KV 93%"] });
  });

  it("counts open breaches per node", () => {
    const burning = (...names: string[]) =>
      names.map((node) => ({ node, site: "", model: "m", requests: 40, bad: 30, burn_rate: 15 }));
    expect(
      breachesByNode([
        { node: "", nodes: burning("a", "b") },
        { node: "", nodes: burning("a") },
        { node: "c", nodes: [] }, // from before burn-rate rules
      ]),
    ).toEqual({ a: 2, b: 1, c: 1 });
  });
});
