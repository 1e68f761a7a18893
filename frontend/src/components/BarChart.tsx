import type { Bar, Highlight } from "../policies/report";

const HIGHLIGHT_LABEL: Record<Highlight, string> = {
  candidate: "candidate",
  baseline: "baseline (active)",
  "best-heuristic": "best heuristic",
};

export function HighlightTags({ highlights }: { highlights: Highlight[] }) {
  return (
    <>
      {highlights.map((h) => (
        <span key={h} className={`tag tag-${h}`}>
          {HIGHLIGHT_LABEL[h]}
        </span>
      ))}
    </>
  );
}

/** Horizontal bars, one per policy, in the theme's colours; `marker` draws a reference line
 *  (e.g. the oracle's attainment) at a percentage of the scale. */
export function BarChart({ title, bars, format, marker, testId }: {
  title: string;
  bars: Bar[];
  format: (value: number) => string;
  marker?: { label: string; percent: number } | null;
  testId?: string;
}) {
  return (
    <figure className="bar-chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      <div className="bars" role="list">
        {bars.map((bar) => (
          <div
            key={bar.label}
            role="listitem"
            className={`bar-row ${bar.highlights.length ? `hl-${bar.highlights[0]}` : ""}`}
          >
            <span className="bar-label" title={bar.label}>
              {bar.label}
            </span>
            <span className="bar-track">
              <span className="bar-fill" style={{ width: `${bar.percent}%` }} />
              {marker && (
                <span className="bar-marker" style={{ left: `${marker.percent}%` }} aria-hidden="true" />
              )}
            </span>
            <span className="bar-value">{format(bar.value)}</span>
          </div>
        ))}
      </div>
      {marker && (
        <div className="small muted bar-legend">
          <span className="marker-swatch" aria-hidden="true" /> {marker.label}
        </div>
      )}
    </figure>
  );
}
