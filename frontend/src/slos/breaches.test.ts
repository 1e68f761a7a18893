import { describe, expect, it } from "vitest";

import type { Breach } from "../api/types";
import { applyBreachEvent, formatMetric, openCountBySlo } from "./breaches";

const event = (id: number, status: string, slo = "interactive") => ({
  type: "breach",
  id,
  status,
  slo,
  model: "llama-3.1-8b",
  node: "muc-l4-1",
  metric: "ttft_p95_ms",
  observed: 5000,
  threshold: 800,
  ts: "2025-01-01T00:00:00Z",
});

describe("applyBreachEvent", () => {
  it("adds an opened breach first and removes it when resolved", () => {
    let open: Breach[] = [];
    open = applyBreachEvent(open, event(1, "open"));
    open = applyBreachEvent(open, event(2, "open", "batch"));
    expect(open.map((b) => b.id)).toEqual([2, 1]);
    expect(openCountBySlo(open)).toEqual({ interactive: 1, batch: 1 });
    open = applyBreachEvent(open, event(1, "resolved"));
    expect(open.map((b) => b.id)).toEqual([2]);
  });

  it("does not duplicate a breach announced twice and ignores malformed events", () => {
    let open = applyBreachEvent([], event(1, "open"));
    open = applyBreachEvent(open, event(1, "open"));
    expect(open).toHaveLength(1);
    expect(applyBreachEvent(open, { type: "breach", id: "x" })).toBe(open);
  });

  it("formats latencies and error rates", () => {
    expect(formatMetric("ttft_p95_ms", 5000)).toBe("5.00 s");
    expect(formatMetric("error_rate", 0.125)).toBe("12.5%");
  });
});
