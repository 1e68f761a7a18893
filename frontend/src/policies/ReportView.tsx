import { BarChart, HighlightTags } from "../components/BarChart";
import { duration, percent, usd } from "../lib/format";
import { bars, reportLoads, type LoadView, type PolicyRow } from "./report";

function signed(points: number | null): string {
  if (points === null) return "—";
  return `${points >= 0 ? "+" : "−"}${Math.abs(points).toFixed(1)} pts`;
}

function Verdict({ view }: { view: LoadView }) {
  const v = view.verdict;
  if (!v) return null;
  const tone = (x: number | null) => (x === null ? "" : x >= 0 ? "tone-ok" : "tone-bad");
  return (
    <div className="chips">
      <span className={`chip ${tone(v.vsBaselinePoints)}`}>vs baseline {signed(v.vsBaselinePoints)}</span>
      <span className={`chip ${tone(v.vsBestHeuristicPoints)}`}>
        vs best heuristic {signed(v.vsBestHeuristicPoints)}
      </span>
      {v.costRatioVsBaseline !== null && (
        <span className={`chip ${v.costRatioVsBaseline <= 1 ? "tone-ok" : "tone-warn"}`}>
          cost ×{v.costRatioVsBaseline.toFixed(2)} vs baseline
        </span>
      )}
    </div>
  );
}

/** p50, p95 and p99 as nested bars on one linear scale per load. */
function TtftChart({ rows }: { rows: PolicyRow[] }) {
  const withTtft = rows.filter((r) => r.ttft);
  const max = Math.max(1, ...withTtft.map((r) => r.ttft!.p99));
  const pct = (v: number) => `${(100 * v) / max}%`;
  return (
    <figure className="bar-chart" data-testid="ttft-chart">
      <figcaption>
        TTFT <span className="muted small">p50 · p95 · p99</span>
      </figcaption>
      <div className="bars" role="list">
        {withTtft.map((r) => (
          <div key={r.spec} role="listitem" className={`bar-row ${r.highlights.length ? `hl-${r.highlights[0]}` : ""}`}>
            <span className="bar-label" title={r.label}>{r.label}</span>
            <span className="bar-track">
              <span className="bar-fill p99" style={{ width: pct(r.ttft!.p99) }} />
              <span className="bar-fill p95" style={{ width: pct(r.ttft!.p95) }} />
              <span className="bar-fill p50" style={{ width: pct(r.ttft!.p50) }} />
            </span>
            <span className="bar-value">
              {duration(r.ttft!.p50)} · {duration(r.ttft!.p95)} · {duration(r.ttft!.p99)}
            </span>
          </div>
        ))}
      </div>
      <div className="small muted bar-legend">
        <span className="swatch p50" /> p50 <span className="swatch p95" /> p95 <span className="swatch p99" /> p99
      </div>
    </figure>
  );
}

function LoadSection({ view }: { view: LoadView }) {
  const marker =
    view.oracleAttainment === null
      ? null
      : { label: `oracle limit ${percent(view.oracleAttainment)}`, percent: 100 * view.oracleAttainment };
  return (
    <section className="load-section" data-load={view.load}>
      <header className="load-header">
        <h3>Load {view.load}×</h3>
        <div className="chips">
          {view.rows
            .filter((r) => r.highlights.length)
            .map((r) => (
              <span key={r.spec} className="chip">
                {r.label} <HighlightTags highlights={r.highlights} />
              </span>
            ))}
        </div>
        <Verdict view={view} />
      </header>
      <div className="report-charts">
        <BarChart
          title="SLO attainment"
          bars={bars(view.rows, (r) => r.attainment, { max: 1 })}
          format={(v) => percent(v)}
          marker={marker}
          testId="attainment-chart"
        />
        <BarChart
          title="Cost per 1k requests"
          bars={bars(view.rows, (r) => r.costPer1k)}
          format={(v) => usd(v, 3)}
          testId="cost-chart"
        />
        <TtftChart rows={view.rows} />
      </div>
    </section>
  );
}

/** Every load of an evaluation report, with the candidate, baseline and best heuristic marked. */
export function ReportView({ report, labels }: { report: unknown; labels: Record<string, string> }) {
  const views = reportLoads(report, labels);
  if (views.length === 0) return <p className="muted small">The report holds no results.</p>;
  return (
    <div className="report" data-testid="evaluation-report">
      {views.map((view) => (
        <LoadSection key={view.load} view={view} />
      ))}
    </div>
  );
}
