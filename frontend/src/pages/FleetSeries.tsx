import { useMemo } from "react";

import { getFleetSeries } from "../api/ops";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { SeriesChart } from "../components/SeriesChart";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { useTimeRange } from "../hooks/useTimeRange";
import { timestamp } from "../lib/format";
import { rangeWindow } from "../lib/timeRange";
import { fleetCharts } from "../series/charts";

const REFRESH_MS = 30_000;

/** Fleet-wide time series over the global time range, with policy rollout moves marked. */
export default function FleetSeries() {
  const [range] = useTimeRange();
  const series = useAsync(() => getFleetSeries(rangeWindow(range, Date.now())), [range.key]);
  useInterval(series.reload, REFRESH_MS);
  const charts = useMemo(() => (series.data ? fleetCharts(series.data) : []), [series.data]);

  let body;
  if (series.error) body = <ErrorBanner error={series.error} />;
  else if (!series.data) body = <p className="muted">Loading the series…</p>;
  else if (series.data.t.length === 0) {
    body = <EmptyState title="No data">Nothing recorded in this range.</EmptyState>;
  } else {
    body = (
      <>
        <div className="chart-grid wide" data-testid="fleet-charts">
          {charts.map(({ key, title, note, ...chart }) => (
            <figure key={key} className="chart-card panel" data-chart={key}>
              <figcaption>
                {title} <span className="small muted">— {note}</span>
              </figcaption>
              <SeriesChart {...chart} />
            </figure>
          ))}
        </div>
        <section className="panel" aria-label="Fleet events">
          <h2>Drains, cordons, breakers and breaches in this range</h2>
          {(series.data.events ?? []).length === 0 ? (
            <p className="muted small">No node state change, breaker move or breach in this range.</p>
          ) : (
            <table className="table dense" data-testid="series-events">
              <thead>
                <tr><th>Time</th><th>Event</th><th>What happened</th></tr>
              </thead>
              <tbody>
                {series.data.events.map((e) => (
                  <tr key={`${e.t}-${e.kind}-${e.subject}`} data-kind={e.kind}>
                    <td>{timestamp(e.t * 1000)}</td>
                    <td>{e.kind.replace("_", " ")}</td>
                    <td>{e.text}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
        <section className="panel" aria-label="Rollout moves">
          <h2>Rollout moves in this range</h2>
          {series.data.marks.length === 0 ? (
            <p className="muted small">No shadow, canary, promote or rollback in this range.</p>
          ) : (
            <table className="table dense" data-testid="rollout-marks">
              <thead>
                <tr><th>Time</th><th>Move</th><th>Policy</th><th>By</th><th>Reason</th></tr>
              </thead>
              <tbody>
                {series.data.marks.map((m) => (
                  <tr key={`${m.t}-${m.kind}-${m.policy}`}>
                    <td>{timestamp(m.t * 1000)}</td>
                    <td>{m.kind}</td>
                    <td className="mono">{m.policy}</td>
                    <td>{m.actor}</td>
                    <td>{m.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      </>
    );
  }

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Fleet time series</h1>
          <p className="small muted">
            Last {range.label}
            {series.data && `, one point per ${series.data.step} s`}; dotted lines mark policy
            rollout moves (blue), drains and cordons (amber), breaker trips and breaches opening
            (red), and recoveries (green). Hovering one chart shows the same moment on all. Pick
            the range at the top.
          </p>
        </div>
      </header>
      {body}
    </div>
  );
}
