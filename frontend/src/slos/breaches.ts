// Open breaches kept current from `breach` live events (telemetry/breaches.py sends one when a
// breach opens and one when it resolves).

import type { Breach } from "../api/types";
import type { LiveEvent } from "../live/stream";
import { duration, percent } from "../lib/format";

export const METRICS = ["ttft_p95_ms", "e2e_p95_ms", "error_rate"] as const;
export const METRIC_LABELS: Record<string, string> = {
  ttft_p95_ms: "TTFT p95",
  e2e_p95_ms: "E2E p95",
  error_rate: "Error rate",
};

export function formatMetric(metric: string, value: number | null | undefined): string {
  return metric === "error_rate" ? percent(value) : duration(value);
}

/** The breach an event describes, or null when the event is malformed. */
export function breachFromEvent(event: LiveEvent): Breach | null {
  const { id, status, slo, model, node, metric, observed, threshold, ts } = event;
  if (typeof id !== "number" || (status !== "open" && status !== "resolved")) return null;
  if (typeof observed !== "number" || typeof threshold !== "number" || typeof ts !== "string") {
    return null;
  }
  return {
    id,
    status,
    slo: String(slo),
    model: String(model),
    node: String(node),
    metric: String(metric) as Breach["metric"],
    observed,
    threshold,
    worst: observed,
    samples: 0,
    opened_at: ts,
    resolved_at: status === "resolved" ? ts : null,
  };
}

/** Open breaches after an event: an opening is added (newest first), a resolution removed. */
export function applyBreachEvent(open: Breach[], event: LiveEvent): Breach[] {
  const breach = breachFromEvent(event);
  if (!breach) return open;
  const others = open.filter((b) => b.id !== breach.id);
  return breach.status === "open" ? [breach, ...others] : others;
}

export function openCountBySlo(open: Breach[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const b of open) counts[b.slo] = (counts[b.slo] ?? 0) + 1;
  return counts;
}
