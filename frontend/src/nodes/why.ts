// GET /api/v1/nodes/{name}/why, typed (the schema types its nested objects loosely), and what
// the node page shows of it.

export interface WhyReason {
  kind: "breach" | "breaker" | "stale" | "state" | "outcomes";
  level: "bad" | "warn" | "info";
  text: string;
}

export interface WhyBreach {
  breach_id: number;
  slo: string;
  severity: string;
  metric: string;
  open: boolean;
  opened_at: string;
  resolved_at: string | null;
  burn_rate: number | null;
  requests: number | null;
  bad: number | null;
}

export interface WhyDecision {
  id: string;
  created_at: string;
  model: string;
  slo: string;
  policy: string;
  arm: string;
  ok: boolean | null;
  slo_met: boolean | null;
  ttft_ms: number | null;
  e2e_ms: number | null;
  picked_in_breach: number | null;
  /** The pick against the runner-up (console/placement/node_why.py); null with one candidate. */
  against_runner_up?: { runner_up: string; worse: string[]; top_feature: string | null } | null;
}

export interface NodeWhy {
  node: string;
  state: string;
  reasons: WhyReason[];
  breaches: WhyBreach[];
  breaker: {
    state: string | null;
    last_change: { from_state: string; to_state: string; reason: string; at: string } | null;
  };
  telemetry: { updated_at: string; age_s: number; stale_after_s: number; stale: boolean } | null;
  state_changes: { action: string; from_state: string; to_state: string; reason: string; actor: string; at: string }[];
  outcomes: {
    window_s: number;
    decisions: number;
    outcomes: number;
    failed: number;
    slo_missed: number;
    picked_in_breach: number;
  };
  recent_decisions: WhyDecision[];
}

/** The page's one-line verdict: the worst reason, or that nothing is wrong. */
export function verdict(why: NodeWhy): { level: WhyReason["level"] | "ok"; text: string } {
  const worst = why.reasons[0];
  if (!worst) return { level: "ok", text: "Nothing wrong: no open breach, breaker closed, telemetry fresh." };
  const more = why.reasons.length - 1;
  return { level: worst.level, text: more > 0 ? `${worst.text} (+${more} more)` : worst.text };
}

/** A decision's outcome in a word. */
export function outcomeWord(d: Pick<WhyDecision, "ok" | "slo_met">): string {
  if (d.ok === null && d.slo_met === null) return "pending";
  if (d.ok === false) return "failed";
  return d.slo_met === false ? "missed SLO" : "met";
}

/** "breaker open since 12:00:03 (3 failures in a row)" or the state alone. */
export function breakerLine(why: NodeWhy, format: (iso: string) => string): string {
  const state = (why.breaker.state ?? "unknown (this server has not decided yet)").replace("_", "-");
  const last = why.breaker.last_change;
  if (!last) return state;
  return `${state} · last move ${last.from_state} → ${last.to_state} at ${format(last.at)} (${last.reason})`;
}

const ESTIMATE_WORDS: Record<string, string> = { ttft_ms: "TTFT", e2e_ms: "E2E", cost_usd: "cost" };

/** "over b · worse est. E2E · moved most by queue_per_slot": how the pick compared with the
 *  runner-up; "—" with no runner-up. */
export function runnerUpLine(against: WhyDecision["against_runner_up"]): string {
  if (!against) return "—";
  const worse = against.worse.length ? ` · worse est. ${against.worse.map((w) => ESTIMATE_WORDS[w] ?? w).join(", ")}` : "";
  const moved = against.top_feature ? ` · moved most by ${against.top_feature}` : "";
  return `over ${against.runner_up}${worse}${moved}`;
}
