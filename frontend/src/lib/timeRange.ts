// The one time range the charts pages share, kept in the URL (`?range=6h`) so a link or a
// reload shows the same window.

export interface TimeRange {
  key: string;
  label: string;
  seconds: number;
  /** Step for node telemetry charts (seconds); the fleet series API picks its own. */
  step: number;
}

export const RANGES: readonly TimeRange[] = [
  { key: "15m", label: "15 min", seconds: 15 * 60, step: 15 },
  { key: "1h", label: "1 h", seconds: 3600, step: 30 },
  { key: "6h", label: "6 h", seconds: 6 * 3600, step: 120 },
  { key: "24h", label: "24 h", seconds: 24 * 3600, step: 600 },
  { key: "7d", label: "7 d", seconds: 7 * 24 * 3600, step: 3600 },
];

export const DEFAULT_RANGE = RANGES[1]!;
export const RANGE_PARAM = "range";

/** The range a URL value names, or the default for a missing or unknown one. */
export function parseRange(value: string | null | undefined): TimeRange {
  return RANGES.find((r) => r.key === value) ?? DEFAULT_RANGE;
}

/** [now - range, now] as RFC 3339 strings. */
export function rangeWindow(range: TimeRange, nowMs: number): { from: string; to: string } {
  return {
    from: new Date(nowMs - range.seconds * 1000).toISOString(),
    to: new Date(nowMs).toISOString(),
  };
}
