// The live decisions view's state, kept bounded however fast decisions arrive.
//
// The server already bounds the stream (console/placement/engine/recorder.py): per second at most
// ~20 sampled `decision` events and one `decision.summary` with the true totals per node and
// policy. Here the sample list holds at most MAX_ROWS rows, and totals come from the summaries
// of the last AGGREGATE_WINDOW_S seconds only, so memory does not grow with the rate or uptime.

import type { DecisionRecord } from "../api/types";
import type { LiveEvent } from "../live/stream";

export const MAX_ROWS = 300;
/** Seconds of summaries behind the per-node and per-policy counts. */
export const AGGREGATE_WINDOW_S = 60;
/** Seconds of summaries behind the rates shown (decisions/s, sampled/s). */
export const RATE_WINDOW_S = 10;

export interface SampledDecision {
  decision_id: string;
  ts: string;
  node: string | null;
  site: string | null;
  model: string;
  slo: string | null;
  policy: string;
  arm: string;
  fallbacks: string[];
  latency_us: number;
  /** A split decision's prefill node (`node` decodes; issue #30), null when `node` ran both. */
  prefill_node: string | null;
  /** The exploration probe that answered instead of the policy (its id; issue #26), or null. */
  probe: number | null;
  /** True for rows loaded from the decision log when the page opened (not live samples). */
  recorded?: boolean;
}

export interface Summary {
  /** When the browser received it (ms since the epoch). */
  at: number;
  windowS: number;
  total: number;
  sampled: number;
  byNode: Record<string, number>;
  byPolicy: Record<string, number>;
}

export interface FeedState {
  /** Newest first, at most MAX_ROWS. */
  rows: SampledDecision[];
  /** Samples that arrived while paused, newest first, at most MAX_ROWS. */
  held: SampledDecision[];
  paused: boolean;
  /** Oldest first, none older than AGGREGATE_WINDOW_S. */
  summaries: Summary[];
  /** When the page started listening (ms), so early rates divide by the time actually seen. */
  since: number;
}

export interface Filters {
  node: string;
  model: string;
  policy: string;
  arm: string;
}

export const NO_FILTERS: Filters = { node: "", model: "", policy: "", arm: "" };

export function emptyFeed(now: number): FeedState {
  return { rows: [], held: [], paused: false, summaries: [], since: now };
}

const str = (value: unknown): string | null => (typeof value === "string" ? value : null);
const num = (value: unknown): number => (typeof value === "number" ? value : 0);
const id = (value: unknown): number | null => (typeof value === "number" ? value : null);

/** A `decision` event as a row, or null when it lacks what a row needs. */
export function sampleFromEvent(event: LiveEvent): SampledDecision | null {
  const decisionId = str(event.decision_id);
  const model = str(event.model);
  if (!decisionId || !model) return null;
  return {
    decision_id: decisionId,
    ts: str(event.ts) ?? new Date().toISOString(),
    node: str(event.node),
    site: str(event.site),
    model,
    slo: str(event.slo),
    policy: str(event.policy) ?? "?",
    arm: str(event.arm) ?? "active",
    fallbacks: Array.isArray(event.fallbacks) ? event.fallbacks.map(String) : [],
    latency_us: num(event.latency_us),
    // Absent from an older server's events: read as an ordinary decision.
    prefill_node: str(event.prefill_node) || null,
    probe: id(event.probe),
  };
}

export function sampleFromRecord(record: DecisionRecord): SampledDecision {
  return {
    decision_id: record.id,
    ts: record.created_at,
    node: record.node,
    site: record.node_site,
    model: record.model,
    slo: record.slo || null,
    policy: `${record.policy_name}@${record.policy_version}`,
    arm: record.arm ?? "active",
    fallbacks: Array.isArray(record.fallbacks) ? record.fallbacks.map(String) : [],
    latency_us: record.latency_us,
    // The record keeps "" for an unsplit decision and no probe for the policy's answers.
    prefill_node: record.prefill_node || null,
    probe: record.probe ?? null,
    recorded: true,
  };
}

function counts(value: unknown): Record<string, number> {
  const out: Record<string, number> = {};
  if (value && typeof value === "object") {
    for (const [key, n] of Object.entries(value)) if (typeof n === "number") out[key] = n;
  }
  return out;
}

export function summaryFromEvent(event: LiveEvent, at: number): Summary {
  return {
    at,
    windowS: num(event.window_s) || 1,
    total: num(event.total),
    sampled: num(event.sampled),
    byNode: counts(event.by_node),
    byPolicy: counts(event.by_policy),
  };
}

function prependBounded(rows: SampledDecision[], add: SampledDecision[]): SampledDecision[] {
  const seen = new Set(add.map((r) => r.decision_id));
  return [...add, ...rows.filter((r) => !seen.has(r.decision_id))].slice(0, MAX_ROWS);
}

export function addSamples(state: FeedState, samples: SampledDecision[]): FeedState {
  if (samples.length === 0) return state;
  const newestFirst = [...samples].reverse();
  if (state.paused) return { ...state, held: prependBounded(state.held, newestFirst) };
  return { ...state, rows: prependBounded(state.rows, newestFirst) };
}

/** Rows from the decision log, placed after any live samples already shown. */
/** Rows from the decision log merged in by time, newest first, without duplicates: when the
 *  page opens (older than every live sample) and after a reconnect (the log then also holds
 *  decisions made while the stream was down, which belong between older and newer rows). */
export function addRecorded(state: FeedState, records: SampledDecision[]): FeedState {
  const seen = new Set(state.rows.map((r) => r.decision_id));
  const fresh = records.filter((r) => !seen.has(r.decision_id));
  // A stable sort on the timestamp keeps rows of the same instant in their given order.
  const rows = [...state.rows, ...fresh].sort((a, b) => Date.parse(b.ts) - Date.parse(a.ts));
  return { ...state, rows: rows.slice(0, MAX_ROWS) };
}

export function setPaused(state: FeedState, paused: boolean): FeedState {
  if (paused === state.paused) return state;
  if (paused) return { ...state, paused, held: [] };
  return { ...state, paused, rows: prependBounded(state.rows, state.held), held: [] };
}

function prune(summaries: Summary[], now: number): Summary[] {
  return summaries.filter((s) => now - s.at <= AGGREGATE_WINDOW_S * 1000);
}

export function addSummary(state: FeedState, summary: Summary): FeedState {
  return { ...state, summaries: prune([...state.summaries, summary], summary.at) };
}

export interface Rates {
  decisionsPerS: number;
  sampledPerS: number;
}

/** Rates over the last RATE_WINDOW_S seconds (or the time since the page started, if less).
 *  The server sends no summary for an idle second, so a quiet fleet decays to zero. */
export function rates(state: FeedState, now: number): Rates {
  const windowMs = Math.min(RATE_WINDOW_S * 1000, Math.max(1000, now - state.since));
  let total = 0;
  let sampled = 0;
  for (const s of state.summaries) {
    if (now - s.at < windowMs) {
      total += s.total;
      sampled += s.sampled;
    }
  }
  return { decisionsPerS: total / (windowMs / 1000), sampledPerS: sampled / (windowMs / 1000) };
}

export interface Aggregate {
  total: number;
  seconds: number;
  byNode: [string, number][];
  byPolicy: [string, number][];
}

function sorted(record: Map<string, number>): [string, number][] {
  return [...record.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
}

/** Totals per node and per policy over the summaries still held, largest first. */
export function aggregate(state: FeedState, now: number): Aggregate {
  const byNode = new Map<string, number>();
  const byPolicy = new Map<string, number>();
  let total = 0;
  for (const s of prune(state.summaries, now)) {
    total += s.total;
    for (const [k, n] of Object.entries(s.byNode)) byNode.set(k, (byNode.get(k) ?? 0) + n);
    for (const [k, n] of Object.entries(s.byPolicy)) byPolicy.set(k, (byPolicy.get(k) ?? 0) + n);
  }
  const seconds = Math.min(AGGREGATE_WINDOW_S, Math.max(1, Math.round((now - state.since) / 1000)));
  return { total, seconds, byNode: sorted(byNode), byPolicy: sorted(byPolicy) };
}

/** A split decision (issue #30) as "prefill → decode", the project's arrow for "then"; the
 *  node otherwise, "none" when nothing could serve the request. */
export function placementText(row: Pick<SampledDecision, "node" | "prefill_node">): string {
  if (!row.node) return "none";
  return row.prefill_node ? `${row.prefill_node} → ${row.node}` : row.node;
}

/** The node filter keeps a decision either node served: a split one prefilled on the node
 *  chosen belongs to what that node is doing. */
export function matches(row: SampledDecision, filters: Filters): boolean {
  return (
    (!filters.node || row.node === filters.node || row.prefill_node === filters.node) &&
    (!filters.model || row.model === filters.model) &&
    (!filters.policy || row.policy === filters.policy) &&
    (!filters.arm || row.arm === filters.arm)
  );
}

/** The values seen for a field, for the filter menus (the current choice always included). */
export function optionsOf(
  rows: SampledDecision[],
  field: "node" | "model" | "policy" | "arm",
  extra: Iterable<string> = [],
): string[] {
  const values = new Set<string>(extra);
  for (const row of rows) {
    const value = row[field];
    if (value) values.add(value);
    if (field === "node" && row.prefill_node) values.add(row.prefill_node);
  }
  return [...values].sort();
}
