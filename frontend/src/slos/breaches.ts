// Open breaches kept current from `breach` live events (telemetry/breaches.py sends one when a
// breach opens and one when it resolves). A breach is an SLO's: a burn-rate rule (page or
// ticket) held over its requests; `nodes` are the nodes that burned its error budget.

import type { Breach, BreachNode } from "../api/types";
import type { LiveEvent } from "../live/stream";
import { duration, percent } from "../lib/format";

export const METRICS = ["within_targets", "error_rate"] as const;
export const METRIC_LABELS: Record<string, string> = {
  within_targets: "Within targets",
  error_rate: "Error rate",
  ttft_p95_ms: "TTFT p95 (before burn rates)",
  e2e_p95_ms: "E2E p95 (before burn rates)",
};

/** A breach's figures: burn rates ("15.2×") for burn-rate breaches; latencies or an error rate
 *  for those from before them. */
export function formatMetric(breach: Pick<Breach, "metric" | "severity">, value: number | null | undefined): string {
  if (value == null) return "—";
  if (breach.severity) return `${value.toFixed(1)}×`;
  return breach.metric === "error_rate" ? percent(value) : duration(value);
}

/** "1 h / 5 min": a rule's long and short windows. */
export function formatWindows(longS: number | null | undefined, shortS: number | null | undefined): string {
  const one = (s: number) => (s >= 3600 ? `${+(s / 3600).toFixed(1)} h` : s >= 60 ? `${+(s / 60).toFixed(1)} min` : `${+s.toFixed(1)} s`);
  return longS == null || shortS == null ? "—" : `${one(longS)} / ${one(shortS)}`;
}

/** The nodes a breach names: those that burned its SLO's budget (or, before burn-rate rules,
 *  its window's node). */
export function breachNodes(breach: Pick<Breach, "nodes" | "node">): string[] {
  const names = breach.nodes.map((n) => n.node);
  if (breach.node) names.push(breach.node);
  return [...new Set(names)];
}

/** The breach an event describes, or null when the event is malformed. */
export function breachFromEvent(event: LiveEvent): Breach | null {
  const { id, status, slo, metric, severity, objective, observed, threshold, nodes, opened_at, ts } = event;
  if (typeof id !== "number" || (status !== "open" && status !== "resolved")) return null;
  if (typeof observed !== "number" || typeof threshold !== "number" || typeof ts !== "string") {
    return null;
  }
  const named: BreachNode[] = Array.isArray(nodes)
    ? nodes.map((node) => ({ node: String(node), site: "", model: "", requests: 0, bad: 0, burn_rate: 0 }))
    : [];
  return {
    id,
    status,
    severity: severity === "page" || severity === "ticket" ? severity : "",
    slo: String(slo),
    metric: String(metric) as Breach["metric"],
    objective: typeof objective === "number" ? objective : null,
    threshold,
    observed,
    worst: observed,
    samples: 0,
    nodes: named,
    model: "",
    node: "",
    opened_at: typeof opened_at === "string" ? opened_at : ts,
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
