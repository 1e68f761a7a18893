// An evaluation report (console/policies/evaluation.py) turned into what the charts draw.
//
// Report: {candidate, baseline, loads: {load: {policies: {spec: figures}, oracle,
// best_heuristic}}, verdict: {load: {...}}}, where a spec is a heuristic's name or a trained
// scorer's directory. The report is stored JSON, so every field is checked, never trusted.

export type Highlight = "candidate" | "baseline" | "best-heuristic";

export interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
}

export interface PolicyRow {
  spec: string;
  label: string;
  highlights: Highlight[];
  attainment: number;
  costPer1k: number;
  prefixHitRate: number | null;
  ttft: Percentiles | null;
}

export interface Verdict {
  vsBaselinePoints: number | null;
  vsBestHeuristicPoints: number | null;
  costRatioVsBaseline: number | null;
}

export interface LoadView {
  load: string;
  rows: PolicyRow[];
  oracleAttainment: number | null;
  bestHeuristic: string | null;
  verdict: Verdict | null;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const numberOr = (value: unknown, fallback: number | null): number | null =>
  typeof value === "number" && Number.isFinite(value) ? value : fallback;

function percentiles(value: unknown): Percentiles | null {
  if (!isObject(value)) return null;
  const p50 = numberOr(value.p50, null);
  const p95 = numberOr(value.p95, null);
  const p99 = numberOr(value.p99, null);
  return p50 === null || p95 === null || p99 === null ? null : { p50, p95, p99 };
}

const ORDER: Highlight[] = ["candidate", "baseline", "best-heuristic"];

function rank(row: PolicyRow): number {
  const first = ORDER.findIndex((h) => row.highlights.includes(h));
  return first === -1 ? ORDER.length : first;
}

/**
 * One view per load, rows ordered candidate, baseline, best heuristic, then the other
 * heuristics by attainment. `labels` names specs for people (a trained scorer's directory
 * becomes its version, e.g. "ppo@run-3").
 */
export function reportLoads(report: unknown, labels: Record<string, string> = {}): LoadView[] {
  if (!isObject(report) || !isObject(report.loads)) return [];
  const candidate = typeof report.candidate === "string" ? report.candidate : null;
  const baseline = typeof report.baseline === "string" ? report.baseline : null;
  const verdicts = isObject(report.verdict) ? report.verdict : {};
  const views: LoadView[] = [];
  for (const [load, body] of Object.entries(report.loads)) {
    if (!isObject(body) || !isObject(body.policies)) continue;
    const best = typeof body.best_heuristic === "string" ? body.best_heuristic : null;
    const rows: PolicyRow[] = [];
    for (const [spec, figures] of Object.entries(body.policies)) {
      if (!isObject(figures)) continue;
      const attainment = numberOr(figures.slo_attainment, null);
      const cost = numberOr(figures.cost_per_1k_requests, null);
      if (attainment === null || cost === null) continue;
      const highlights: Highlight[] = [];
      if (spec === candidate) highlights.push("candidate");
      if (spec === baseline) highlights.push("baseline");
      if (spec === best) highlights.push("best-heuristic");
      rows.push({
        spec,
        label: labels[spec] ?? spec,
        highlights,
        attainment,
        costPer1k: cost,
        prefixHitRate: numberOr(figures.prefix_hit_rate, null),
        ttft: percentiles(figures.ttft_ms),
      });
    }
    rows.sort((a, b) => rank(a) - rank(b) || b.attainment - a.attainment || a.costPer1k - b.costPer1k);
    const v = verdicts[load];
    views.push({
      load,
      rows,
      oracleAttainment: isObject(body.oracle) ? numberOr(body.oracle.slo_attainment, null) : null,
      bestHeuristic: best,
      verdict: isObject(v)
        ? {
            vsBaselinePoints: numberOr(v.vs_baseline_points, null),
            vsBestHeuristicPoints: numberOr(v.vs_best_heuristic_points, null),
            costRatioVsBaseline: numberOr(v.cost_ratio_vs_baseline, null),
          }
        : null,
    });
  }
  return views.sort((a, b) => Number(a.load) - Number(b.load));
}

export interface Bar {
  label: string;
  value: number;
  /** 0–100: the bar's length against the chart's scale. */
  percent: number;
  highlights: Highlight[];
}

/** Bars on a scale from zero to `max` (default: the largest value, at least `floor`). */
export function bars(
  rows: PolicyRow[],
  value: (row: PolicyRow) => number,
  options: { max?: number; floor?: number } = {},
): Bar[] {
  const values = rows.map(value);
  const max = options.max ?? Math.max(options.floor ?? 0, ...values);
  return rows.map((row, i) => ({
    label: row.label,
    value: values[i]!,
    percent: max > 0 ? Math.max(0, Math.min(100, (100 * values[i]!) / max)) : 0,
    highlights: row.highlights,
  }));
}
