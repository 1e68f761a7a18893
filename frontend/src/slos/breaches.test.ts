import { describe, expect, it } from "vitest";

import type { Breach } from "../api/types";
import { applyBreachEvent, breachNodes, formatMetric, formatWindows, openCountBySlo } from "./breaches";

const event = (id: number, status: string, slo = "interactive") => ({
  type: "breach",
  id,
  status,
  slo,
  model: "",
  node: "",
  metric: "within_targets",
  severity: "page",
  objective: 0.95,
  observed: 15.2,
  threshold: 14.4,
  nodes: ["muc-l4-1"],
  opened_at: "2025-01-01T00:00:00Z",
  ts: "2025-01-01T00:00:00Z",
});

describe("applyBreachEvent", () => {
  it("adds an opened breach first and removes it when resolved", () => {
    let open: Breach[] = [];
    open = applyBreachEvent(open, event(1, "open"));
    open = applyBreachEvent(open, event(2, "open", "batch"));
    expect(open.map((b) => b.id)).toEqual([2, 1]);
    expect(openCountBySlo(open)).toEqual({ interactive: 1, batch: 1 });
    const [, first] = open;
    expect(first?.severity).toBe("page");
    expect(first && breachNodes(first)).toEqual(["muc-l4-1"]);
    open = applyBreachEvent(open, event(1, "resolved"));
    expect(open.map((b) => b.id)).toEqual([2]);
  });

  it("does not duplicate a breach announced twice and ignores malformed events", () => {
    let open = applyBreachEvent([], event(1, "open"));
    open = applyBreachEvent(open, event(1, "open"));
    expect(open).toHaveLength(1);
    expect(applyBreachEvent(open, { type: "breach", id: "x" })).toBe(open);
  });

  it("formats burn rates, and the latencies and error rates of older breaches", () => {
    expect(formatMetric({ metric: "within_targets", severity: "page" }, 15.24)).toBe("15.2×");
    expect(formatMetric({ metric: "ttft_p95_ms", severity: "" }, 5000)).toBe("5.00 s");
    expect(formatMetric({ metric: "error_rate", severity: "" }, 0.125)).toBe("12.5%");
    expect(formatWindows(3600, 300)).toBe("1 h / 5 min");
    expect(formatWindows(120, 10)).toBe("2 min / 10 s");
  });
});
