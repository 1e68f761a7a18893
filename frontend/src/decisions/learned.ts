import type { Receipt } from "../api/types";

export type LearnedWhy = NonNullable<Receipt["learned"]>;

// What each feature of a learned scorer's row means (optimizer/decide/state/features.py).
const LABELS: Record<string, string> = {
  req_prompt_ktokens: "prompt (k tokens)",
  req_output_ktokens: "max output (k tokens)",
  req_slo_ttft_s: "SLO TTFT target (s)",
  req_slo_e2e_min: "SLO E2E target (min)",
  req_residency_bound: "residency-bound request",
  est_ttft_s: "estimated TTFT (s)",
  est_e2e_min: "estimated E2E (min)",
  est_wait_s: "estimated queue wait (s)",
  est_prefill_s: "estimated prefill (s)",
  ttft_over_target: "estimated TTFT ÷ target",
  e2e_over_target: "estimated E2E ÷ target",
  est_cost_usd_per_1k: "estimated cost ($ / 1k)",
  rtt_100ms: "network RTT (× 100 ms)",
  transfer_s: "prompt transfer (s)",
  prefix_match_fraction: "prompt share in its cache",
  same_site: "same site as the caller",
  queue_per_slot: "queue per batch slot",
  batch_fraction: "batch filled",
  kv_used_fraction: "KV cache used",
  usd_per_hour_10: "price (× $10 / h)",
  prefill_ktokens_per_s_10: "prefill rate (× 10k tokens/s)",
  decode_step_100ms: "decode step (× 100 ms)",
};

/** A feature's plain name; tier flags read "tier: edge". */
export function featureLabel(name: string): string {
  if (name.startsWith("tier_")) return `tier: ${name.slice(5)}`;
  return LABELS[name] ?? name;
}

/** "pick +1.23" or "runner-up −0.40": which way a contribution pushed, and how far. */
export function contributionText(value: number): string {
  const size = Math.abs(value).toFixed(2);
  return value >= 0 ? `pick +${size}` : `runner-up −${size}`;
}

/** One sentence: how the margin splits into the scorer's and the cost price's parts. */
export function marginText(why: LearnedWhy): string {
  const cost = why.cost_term === 0 ? "" : `; the cost price adds ${why.cost_term >= 0 ? "+" : "−"}${Math.abs(why.cost_term).toFixed(2)}`;
  return `Score margin over ${why.runner_up}: ${why.margin.toFixed(2)} (the scorer's network ${why.scorer_margin.toFixed(2)}${cost}).`;
}
