import { useEffect, useMemo, useState } from "react";

import { listDecisions } from "../api/ops";
import { useInterval } from "../hooks/useInterval";
import { useCan } from "../auth/session";
import { ErrorBanner } from "../components/ErrorBanner";
import { DecisionDetail } from "../decisions/DecisionDetail";
import { ExplainPanel } from "../decisions/ExplainPanel";
import { Placement } from "../decisions/Placement";
import {
  addRecorded,
  addSamples,
  addSummary,
  aggregate,
  emptyFeed,
  matches,
  MAX_ROWS,
  NO_FILTERS,
  optionsOf,
  rates,
  sampleFromEvent,
  sampleFromRecord,
  setPaused,
  summaryFromEvent,
  type Filters,
  type SampledDecision,
} from "../decisions/feed";
import { useConnectionState, useLiveEvent } from "../live/context";
import { rate, timestamp } from "../lib/format";

const RECENT_RECORDS = 50;

function CountBars({ title, rows, total, active, testId }: {
  title: string;
  rows: [string, number][];
  total: number;
  active: string;
  testId: string;
}) {
  const max = Math.max(1, ...rows.map(([, n]) => n));
  return (
    <figure className="bar-chart" data-testid={testId}>
      <figcaption>{title}</figcaption>
      {rows.length === 0 ? (
        <p className="muted small">No decisions in this window.</p>
      ) : (
        <div className="bars" role="list">
          {rows.map(([key, n]) => (
            <div key={key} role="listitem" className={`bar-row ${active && key !== active ? "dim" : ""}`}>
              <span className="bar-label" title={key}>
                {key}
              </span>
              <span className="bar-track">
                <span className="bar-fill" style={{ width: `${(100 * n) / max}%` }} />
              </span>
              <span className="bar-value">
                {n.toLocaleString()} <span className="muted">({Math.round((100 * n) / Math.max(1, total))}%)</span>
              </span>
            </div>
          ))}
        </div>
      )}
    </figure>
  );
}

function FilterSelect({ label, value, options, onChange }: {
  label: string;
  value: string;
  options: string[];
  onChange: (value: string) => void;
}) {
  return (
    <label className="field inline">
      <span>{label}</span>
      <select value={value} onChange={(e) => onChange(e.target.value)}>
        <option value="">all</option>
        {options.map((o) => (
          <option key={o}>{o}</option>
        ))}
      </select>
    </label>
  );
}

function SampleTable({ rows, selected, onSelect }: {
  rows: SampledDecision[];
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  if (rows.length === 0) {
    return <p className="muted small empty-rows">No decisions match yet; they appear here as they are made.</p>;
  }
  return (
    <div className="table-scroll tall">
      <table className="table dense clickable" data-testid="decision-rows">
        <thead>
          <tr>
            <th>Time</th>
            <th>Model</th>
            <th>SLO</th>
            <th>Node</th>
            <th>Fallbacks</th>
            <th>Policy</th>
            <th>Arm</th>
            <th className="num">Decided in</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={r.decision_id}
              data-decision={r.decision_id}
              className={`${r.decision_id === selected ? "selected" : ""} ${r.recorded ? "recorded" : ""}`}
              onClick={() => onSelect(r.decision_id)}
              tabIndex={0}
              onKeyDown={(e) => e.key === "Enter" && onSelect(r.decision_id)}
            >
              <td>{timestamp(r.ts)}</td>
              <td>{r.model}</td>
              <td>{r.slo ?? "—"}</td>
              <td className="mono">
                <Placement row={r} />
              </td>
              <td className="mono small" title={r.fallbacks.join(", ")}>
                {r.fallbacks[0] ?? "—"}
                {r.fallbacks.length > 1 && <span className="muted"> +{r.fallbacks.length - 1}</span>}
              </td>
              <td className="mono small clip" title={r.policy}>{r.policy}</td>
              <td>{r.arm === "canary" ? <span className="badge state-canary">canary</span> : "active"}</td>
              <td className="num">{r.latency_us.toFixed(0)} µs</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export default function LiveDecisions() {
  const canExplain = useCan("explain-decisions");
  const [feed, setFeed] = useState(() => emptyFeed(Date.now()));
  const [now, setNow] = useState(() => Date.now());
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [selected, setSelected] = useState<string | null>(null);
  const [loadError, setLoadError] = useState<unknown>();

  useInterval(() => setNow(Date.now()), 1000);

  // The decision log is loaded when the page opens and again whenever the live stream
  // (re)connects: samples sent while it was down are lost, the log has those decisions.
  const connected = useConnectionState() === "connected";
  useEffect(() => {
    let current = true;
    listDecisions({ limit: RECENT_RECORDS })
      .then((page) => {
        if (!current) return;
        setFeed((f) => addRecorded(f, page.results.map(sampleFromRecord)));
        setLoadError(undefined);
      })
      .catch((e: unknown) => current && setLoadError(e));
    return () => {
      current = false;
    };
  }, [connected]);

  useLiveEvent("decision", (event) => {
    const row = sampleFromEvent(event);
    if (row) setFeed((f) => addSamples(f, [row]));
  });
  useLiveEvent("decision.summary", (event) =>
    setFeed((f) => addSummary(f, summaryFromEvent(event, Date.now()))),
  );

  const r = rates(feed, now);
  const agg = useMemo(() => aggregate(feed, now), [feed, now]);
  const visible = feed.rows.filter((row) => matches(row, filters));
  const set = (key: keyof Filters) => (value: string) => setFilters((f) => ({ ...f, [key]: value }));

  return (
    <div className="page">
      <header className="page-header">
        <div>
          <h1>Live decisions</h1>
          <p className="sample-note" data-testid="sample-note">
            Showing <strong>{rate(r.sampledPerS)}</strong> sampled of{" "}
            <strong>{rate(r.decisionsPerS)}</strong> decisions/s{" "}
            <span className="muted">
              — the list is a sample (at most ~20 a second reach the browser); the counts below are
              the full totals. Keeps the latest {MAX_ROWS} rows.
            </span>
          </p>
        </div>
        <div className="toolbar">
          <FilterSelect label="Node" value={filters.node} onChange={set("node")}
            options={optionsOf(feed.rows, "node", agg.byNode.map(([k]) => k))} />
          <FilterSelect label="Model" value={filters.model} onChange={set("model")}
            options={optionsOf(feed.rows, "model")} />
          <FilterSelect label="Policy" value={filters.policy} onChange={set("policy")}
            options={optionsOf(feed.rows, "policy", agg.byPolicy.map(([k]) => k))} />
          <FilterSelect label="Arm" value={filters.arm} onChange={set("arm")}
            options={optionsOf(feed.rows, "arm", ["active", "canary"])} />
          <button
            type="button"
            className={`button ${feed.paused ? "primary" : ""}`}
            onClick={() => setFeed((f) => setPaused(f, !f.paused))}
          >
            {feed.paused ? `Resume (${feed.held.length} held)` : "Pause"}
          </button>
        </div>
      </header>
      <ErrorBanner error={loadError} />
      <div className="decisions-grid">
        <section className="panel" aria-label="Sampled decisions">
          <header className="panel-header">
            <h2>Sampled decisions</h2>
            <span className="small muted">
              {visible.length} of {feed.rows.length} rows{feed.paused && " · paused"}
              {feed.rows.some((row) => row.recorded) && " · grey: from the log when the page opened"} · click
              a row for its record
            </span>
          </header>
          <SampleTable rows={visible} selected={selected} onSelect={setSelected} />
        </section>
        <div className="side-stack">
          {selected && <DecisionDetail id={selected} onClose={() => setSelected(null)} />}
          <section className="panel" aria-label="Decision counts">
            <header className="panel-header">
              <h2>All decisions, last {agg.seconds} s</h2>
              <span className="big-number" data-testid="decision-total">{agg.total.toLocaleString()}</span>
            </header>
            <CountBars title="Per node" rows={agg.byNode} total={agg.total} active={filters.node} testId="by-node" />
            <CountBars title="Per policy" rows={agg.byPolicy} total={agg.total} active={filters.policy} testId="by-policy" />
            <p className="small muted">From the server’s per-second summaries: every decision counted, whatever the model/arm filter.</p>
          </section>
        </div>
      </div>
      {canExplain && <ExplainPanel />}
    </div>
  );
}
