// Names for the schema's components, generated from the OpenAPI schema (`npm run gen:api`).
import type { components } from "./schema";

type Schemas = components["schemas"];

export type Me = Schemas["Me"];
export type Site = Schemas["Site"];
export type Link = Schemas["Link"];
export type Node = Schemas["Node"];
export type Slo = Schemas["Slo"];
export type Source = Schemas["Source"];
export type Accelerator = Schemas["Accelerator"];
export type ServedModel = Schemas["ServedModel"];
export type NodeState = Node["state"];
export type Tier = Site["tier"];

export interface Page<T> {
  count: number;
  next?: string | null;
  previous?: string | null;
  results: T[];
}

/** GET /api/v1/nodes/{name}/telemetry?metric=: one series per label set, points [ISO time, value]. */
export interface TelemetrySeries {
  node: string;
  metric: string;
  truncated: boolean;
  series: { labels: Record<string, string>; points: [string, number][] }[];
}

/** One node's entry in GET /api/v1/telemetry/latest (canonical units; null = never reported). */
export interface LatestTelemetry {
  updated_at: string;
  age_s: number;
  stale: boolean;
  queue_depth: number | null;
  running: number | null;
  kv_usage: number | null;
  gpu_util: number | null;
  ttft_p95_s: number | null;
  prefix_hit_rate: number | null;
}

export type DecisionRecord = Schemas["DecisionRecord"];
export type Receipt = Schemas["Receipt"];
export type FleetSeries = Schemas["FleetSeries"];
export type RolloutMark = Schemas["RolloutMark"];
export type NodeStateChange = Schemas["NodeStateChange"];
export type ApiKey = Schemas["ApiKey"];
export type IssuedApiKey = Schemas["IssuedApiKey"];
export type Breach = Schemas["Breach"];
export type BreachNode = Schemas["BreachNode"];

/** GET /api/v1/breaches/burn-rates: the rules breaches are judged by, and each SLO's burn
 *  rates now (telemetry/selectors.py `slo_burn_rates`). */
export interface BurnRates {
  period_days: number;
  min_requests: number;
  evaluated_every_s: number;
  rules: {
    severity: "page" | "ticket";
    factor: number;
    long_window_s: number;
    short_window_s: number;
    hold_s: number;
    clear_s: number;
  }[];
  slos: {
    slo: string;
    sli: string;
    objective: number;
    rules: {
      severity: "page" | "ticket";
      requests: number;
      bad: number;
      long_burn_rate: number | null;
      short_burn_rate: number | null;
      holds: boolean;
    }[];
  }[];
}
export type PolicyVersion = Schemas["PolicyVersion"];
export type PolicyState = NonNullable<PolicyVersion["state"]>;
export type PolicyTransition = Schemas["PolicyTransition"];
export type PolicyEvaluation = Schemas["PolicyEvaluation"];
export type TrainingRun = Schemas["TrainingRun"];
export type JobStatus = NonNullable<TrainingRun["status"]>;
export type CalibrationRun = Schemas["CalibrationRun"];
export type ProposalDecision = Schemas["ProposalDecision"];
export type ExplorationProbe = Schemas["ExplorationProbe"];
export type ProbeProposal = Schemas["ProbeProposalRequest"];
export type PlacementRequest = Schemas["PlacementRequestBodyRequest"];

/** One ranked candidate of an explained placement (POST /placements with explain: true). */
export interface Candidate {
  node: string;
  site: string;
  tier: string;
  score: number;
  rank: number;
  estimated_ttft_ms: number;
  estimated_e2e_ms: number;
  estimated_cost_usd: number;
  queue_depth: number;
  running: number;
  kv_used_fraction: number;
  prefix_blocks: number;
  telemetry_age_s: number | null;
}

export interface PlacementAnswer {
  decision_id: string;
  node: string;
  site: string;
  fallbacks: string[];
  policy: { name: string; version: string };
  arm: string;
  degraded?: string;
  candidates?: Candidate[];
  rejected?: { node: string; reason: string }[];
}

/** GET /api/v1/overview (console/placement/selectors.decision_overview). */
export type Overview = Schemas["Overview"];
/** One SLO's attainment over the overview's window, with its objective, burn rates and open
 *  breach (telemetry/slo_status.py). */
export type SloAttainment = Schemas["SloAttainment"];
export type BurnRate = Schemas["BurnRate"];

/** GET /api/v1/rollout: policy keys are "name@version". */
export interface Rollout {
  active: string;
  shadow: string | null;
  canary: string | null;
  canary_share: number;
  arms?: Record<
    string,
    {
      outcomes: number;
      slo_attainment: number | null;
      breached_groups: number;
      groups: number;
      /** The picked nodes' estimated cost (decision receipts), US dollars per 1,000 requests. */
      estimated_usd_per_1k?: number | null;
      /** Served requests' cost from measurements (console/policies/attribution.py), US
       * dollars per 1,000 of them; null when none could be attributed. */
      attributed_usd_per_1k?: number | null;
      attributed_outcomes?: number;
    }
  >;
  /** During a canary with outcomes on both arms: canary minus active SLO attainment, with
   * Newcombe's 95% interval (optimizer/stats.py). */
  canary_vs_active?: {
    slo_attainment_difference: number;
    slo_attainment_difference_95: [number, number];
  };
  /** The loads and seeds an evaluation runs when it names none (LOCUS_EVALUATION_*). */
  evaluation_defaults: { loads: number[]; seeds: number[] };
  /** The rest is there while a canary runs (console/policies/rollout.py). */
  canary_id?: number;
  started_at?: string;
  elapsed_s?: number;
  /** From the attainment difference's 95% interval: above zero, below, or containing it. */
  verdict?: { verdict: "winning" | "losing" | "undecided"; why: string };
  /** The headline cost: attributed US dollars per 1k served requests; the estimate's ratio
   * is secondary. */
  cost?: {
    headline: "attributed_usd_per_1k";
    canary_usd_per_1k: number | null;
    active_usd_per_1k: number | null;
    canary_vs_active: number | null;
    estimated_canary_vs_active: number | null;
  };
  watchdog?: {
    state: "waiting" | "healthy" | "rollback";
    said: string;
    period_s: number;
    last_check_at: string | null;
    last_said: string | null;
    next_check_at: string | null;
    window_s: number;
    min_outcomes: number;
  };
}

/** A version's live shadow comparison (PolicyVersion.shadow). */
export interface ShadowStats {
  compared: number;
  agreed: number;
  agreement: number | null;
  mean_predicted_ttft_delta_ms: number | null;
  predicted_cost_delta_usd_sum: number;
  updated_at: string;
}
