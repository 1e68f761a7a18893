// Reading a calibration report (optimizer/calibration/run.py, docs/twin.md "Report") for the
// Twin page: fidelity rows, nominal-vs-fitted profile and link bandwidth rows, and the predicted-vs-observed
// TTFT pairs the plot draws.

export const PROFILE_FIELDS = ["prefill_tokens_per_s", "decode_step_ms", "decode_step_ms_per_seq"] as const;
export type ProfileField = (typeof PROFILE_FIELDS)[number];

export interface FittedValue {
  nominal: number;
  fitted: number;
  interval: [number | null, number | null] | null;
  samples: number;
  /** fitted, agrees_with_nominal, not_identifiable or insufficient_data ("" in old reports). */
  status: string;
  /** Half-width of the 95% interval from the data alone, relative to the value (null: open). */
  relativeCi: number | null;
}

/** Whether applying the proposal improves the held-out errors (optimizer/calibration/holdout.py). */
export interface Verdict {
  verdict: "improved" | "no_improvement";
  reason: string;
  worse: string[];
  heldOut: number;
}

export interface ProfileRow {
  key: string;
  model: string;
  accelerator: string;
  status: string;
  samples: number;
  meanBatch: number;
  values: Record<ProfileField, FittedValue>;
}

/** A link whose bandwidth split requests' KV transfers measured (issue #30). */
export interface LinkRow {
  key: string;
  a: string;
  b: string;
  /** The bandwidth in Gb/s; its `samples` are the transfers that crossed the link. */
  bandwidth: FittedValue;
}

export interface FidelityRow {
  metric: "ttft" | "e2e";
  before: { median: number; p95: number };
  after: { median: number; p95: number };
}

/** The scatter: observed TTFT (ms, ascending) against the replay's before and after. */
export interface TtftPairs {
  observed: number[];
  before: number[];
  after: number[];
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : NaN;
}

export function profileRows(report: unknown): ProfileRow[] {
  if (!isObject(report) || !Array.isArray(report.profiles)) return [];
  return report.profiles.filter(isObject).map((entry) => {
    const values = isObject(entry.values) ? entry.values : {};
    const read = (field: ProfileField): FittedValue => fittedValue(values[field]);
    const model = String(entry.model ?? "");
    const accelerator = String(entry.accelerator ?? "");
    return {
      key: `${model}@${accelerator}`,
      model,
      accelerator,
      status: String(entry.status ?? ""),
      samples: num(entry.samples),
      meanBatch: num(entry.mean_decode_batch),
      values: {
        prefill_tokens_per_s: read("prefill_tokens_per_s"),
        decode_step_ms: read("decode_step_ms"),
        decode_step_ms_per_seq: read("decode_step_ms_per_seq"),
      },
    };
  });
}

function fittedValue(value: unknown): FittedValue {
  const v = isObject(value) ? value : {};
  const interval = Array.isArray(v.interval) && v.interval.length === 2
    ? ([v.interval[0] ?? null, v.interval[1] ?? null] as [number | null, number | null])
    : null;
  const ident = isObject(v.identifiability) ? (v.identifiability as Json) : {};
  const ci = num(ident.relative_ci);
  return {
    nominal: num(v.nominal),
    fitted: num(v.fitted),
    interval,
    samples: num(v.samples),
    status: String(v.status ?? ""),
    relativeCi: Number.isFinite(ci) ? ci : null,
  };
}

/** The links whose bandwidth the report gives (those split requests' KV crossed); a report
 * without split requests has none. */
export function linkRows(report: unknown): LinkRow[] {
  if (!isObject(report) || !Array.isArray(report.links)) return [];
  return report.links
    .filter(isObject)
    .filter((entry) => isObject(entry.values) && isObject(entry.values.bandwidth_gbps))
    .map((entry) => {
      const a = String(entry.a ?? "");
      const b = String(entry.b ?? "");
      return { key: `${a}–${b}`, a, b, bandwidth: fittedValue((entry.values as Json).bandwidth_gbps) };
    });
}

/** The verdict of a run (its API field), or null for a run that has none (not succeeded). */
export function readVerdict(value: unknown): Verdict | null {
  if (!isObject(value)) return null;
  const verdict = value.verdict === "improved" ? "improved" : "no_improvement";
  return {
    verdict,
    reason: String(value.reason ?? ""),
    worse: Array.isArray(value.worse) ? value.worse.map(String) : [],
    heldOut: num(value.held_out),
  };
}

/** What the Profiles and Links tables say of a value the calibration kept at nominal. */
export function keptNote(value: FittedValue): string | null {
  if (value.status === "not_identifiable") return "not identifiable: kept";
  if (value.status === "agrees_with_nominal") return "agrees with nominal";
  return null;
}

export function fidelityRows(report: unknown): FidelityRow[] {
  if (!isObject(report) || !isObject(report.fidelity)) return [];
  const { before, after } = report.fidelity;
  if (!isObject(before) || !isObject(after)) return [];
  return (["ttft", "e2e"] as const).map((metric) => {
    const pick = (side: Json) => {
      const m = isObject(side[metric]) ? (side[metric] as Json) : {};
      return { median: num(m.median_abs_rel_error), p95: num(m.p95_abs_rel_error) };
    };
    return { metric, before: pick(before), after: pick(after) };
  });
}

export function ttftPairs(report: unknown): TtftPairs {
  const pairs = isObject(report) && Array.isArray(report.ttft_pairs) ? report.ttft_pairs : [];
  const rows = pairs
    .filter((p): p is number[] => Array.isArray(p) && p.length === 3 && p.every((x) => Number.isFinite(x)))
    .sort((a, b) => a[0]! - b[0]!);
  return {
    observed: rows.map((r) => r[0]!),
    before: rows.map((r) => r[1]!),
    after: rows.map((r) => r[2]!),
  };
}

/** The fitted value relative to nominal, e.g. 0.77 for a profile 1.3x slower at prefill. */
export function ratio(value: FittedValue): number {
  return value.nominal > 0 ? value.fitted / value.nominal : NaN;
}
