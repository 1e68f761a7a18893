import { Link } from "react-router";

import { api } from "../../api/client";
import { ErrorBanner } from "../../components/ErrorBanner";
import { searchToUrl, EMPTY_SEARCH } from "../../decisions/search";
import { useAsync } from "../../hooks/useAsync";
import { useInterval } from "../../hooks/useInterval";
import { duration, timestamp } from "../../lib/format";
import { useLiveEvent } from "../../live/context";
import { breakerLine, outcomeWord, runnerUpLine, verdict, type NodeWhy as Why } from "../../nodes/why";

const REFRESH_MS = 15_000;

/** Why the node looks as it does (GET /api/v1/nodes/{name}/why): the reasons worst first,
 *  its breaches, breaker, telemetry age and its recent decisions with their outcomes. */
export function NodeWhy({ name, generation }: { name: string; generation: string | null }) {
  const why = useAsync(
    () => api.request<Why>(`/api/v1/nodes/${encodeURIComponent(name)}/why`),
    [name, generation],
  );
  useInterval(why.reload, REFRESH_MS);
  useLiveEvent("breach", why.reload);

  if (why.error) return <ErrorBanner error={why.error} />;
  const data = why.data;
  if (!data) return <section className="panel"><p className="muted small">Loading why…</p></section>;
  const top = verdict(data);
  const o = data.outcomes;
  const all = searchToUrl({ ...EMPTY_SEARCH, node: name }).toString();
  return (
    <section className="panel why" aria-label="Why this node" data-testid="node-why">
      <header className="panel-header">
        <h2>Why</h2>
        <span className={`why-verdict level-${top.level}`} data-testid="why-verdict">{top.text}</span>
      </header>
      {data.reasons.length > 1 && (
        <ul className="why-reasons" data-testid="why-reasons">
          {data.reasons.map((r) => (
            <li key={r.kind + r.text} className={`level-${r.level}`} data-kind={r.kind}>{r.text}</li>
          ))}
        </ul>
      )}
      <dl className="properties">
        <div>
          <dt>Breaker</dt>
          <dd data-testid="why-breaker">{breakerLine(data, timestamp)}</dd>
        </div>
        <div>
          <dt>Telemetry</dt>
          <dd>
            {data.telemetry
              ? `${data.telemetry.age_s.toFixed(0)} s old${data.telemetry.stale ? ` — stale (after ${data.telemetry.stale_after_s} s)` : ""}`
              : "never reported"}
          </dd>
        </div>
        <div>
          <dt>Last {Math.round(o.window_s / 60)} min</dt>
          <dd data-testid="why-outcomes">
            {o.decisions} decisions, {o.outcomes} outcomes: {o.failed} failed, {o.slo_missed} missed their SLO
            {o.picked_in_breach > 0 && <strong> · {o.picked_in_breach} placed while in a breach</strong>}
          </dd>
        </div>
      </dl>
      {data.breaches.length > 0 && (
        <table className="table dense" data-testid="why-breaches">
          <thead>
            <tr><th>Breach</th><th>SLO</th><th>Level</th><th>Opened</th><th>Resolved</th><th className="num">Node's burn rate</th><th className="num">Bad / requests</th></tr>
          </thead>
          <tbody>
            {data.breaches.map((b) => (
              <tr key={b.breach_id} className={b.open ? "open" : "muted"}>
                <td><Link to="/slos">#{b.breach_id}</Link></td>
                <td>{b.slo}</td>
                <td>{b.severity || "—"}</td>
                <td>{timestamp(b.opened_at)}</td>
                <td>{b.resolved_at ? timestamp(b.resolved_at) : <strong>open</strong>}</td>
                <td className="num">{b.burn_rate == null ? "—" : `${b.burn_rate.toFixed(1)}×`}</td>
                <td className="num">{b.bad == null ? "—" : `${b.bad} / ${b.requests}`}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>
        Recent decisions <Link className="small" to={`/decisions/search?${all}`}>all decisions on {name}</Link>
      </h3>
      {data.recent_decisions.length === 0 ? (
        <p className="muted small">No decision has been placed here.</p>
      ) : (
        <table className="table dense" data-testid="why-decisions">
          <thead>
            <tr><th>Time</th><th>Decision</th><th>Model</th><th>SLO</th><th>Policy</th><th>Outcome</th><th className="num">TTFT / E2E</th><th>In breach</th><th>Over runner-up</th></tr>
          </thead>
          <tbody>
            {data.recent_decisions.map((d) => (
              <tr key={d.id} data-decision={d.id}>
                <td>{timestamp(d.created_at)}</td>
                <td className="mono small"><Link to={`/decisions/${encodeURIComponent(d.id)}`}>{d.id}</Link></td>
                <td>{d.model}</td>
                <td>{d.slo || "—"}</td>
                <td className="mono small">{d.policy}{d.arm === "canary" ? " (canary)" : ""}</td>
                <td>{outcomeWord(d)}</td>
                <td className="num">{duration(d.ttft_ms)} / {duration(d.e2e_ms)}</td>
                <td>{d.picked_in_breach == null ? "—" : <span className="badge level-bad">#{d.picked_in_breach}</span>}</td>
                <td className="small" data-testid="why-runner-up">{runnerUpLine(d.against_runner_up)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
