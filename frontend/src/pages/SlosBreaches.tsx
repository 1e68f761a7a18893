import { useState } from "react";
import { Link } from "react-router";

import { listBreaches, listSlos } from "../api/ops";
import type { Breach, Overview, Slo } from "../api/types";
import { Badge } from "../components/Badge";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { useAsync } from "../hooks/useAsync";
import { useOpenBreaches, useOverview } from "../hooks/useOps";
import { duration, percent, timestamp, usd } from "../lib/format";
import { formatMetric, METRIC_LABELS, METRICS, openCountBySlo } from "../slos/breaches";

const PAGE = 25;

function Attainment({ value }: { value: number | null }) {
  if (value === null) return <span className="muted">no outcomes</span>;
  const tone = value >= 0.99 ? "ok" : value >= 0.95 ? "warn" : "bad";
  return <strong className={`tone-${tone}`}>{percent(value)}</strong>;
}

function SloTable({ slos, overview, openBySlo }: {
  slos: Slo[];
  overview: Overview | undefined;
  openBySlo: Record<string, number>;
}) {
  const attainment = new Map((overview?.slo_attainment ?? []).map((a) => [a.slo, a]));
  return (
    <section className="panel" aria-label="SLO targets">
      <header className="panel-header">
        <h2>SLO targets and attainment</h2>
        <span className="small muted">
          Attainment: outcomes that met every target, last {Math.round((overview?.window_s ?? 900) / 60)} min · refreshed every 10 s
        </span>
      </header>
      <table className="table" data-testid="slo-table">
        <thead>
          <tr>
            <th>SLO</th>
            <th className="num">TTFT p95</th>
            <th className="num">E2E p95</th>
            <th className="num">Max errors</th>
            <th>Residency</th>
            <th className="num">Max $/1k</th>
            <th className="num">Attainment</th>
            <th className="num">Outcomes</th>
            <th className="num">Open breaches</th>
          </tr>
        </thead>
        <tbody>
          {slos.map((slo) => {
            const a = attainment.get(slo.name);
            const open = openBySlo[slo.name] ?? 0;
            return (
              <tr key={slo.name} data-slo={slo.name}>
                <td><strong>{slo.name}</strong></td>
                <td className="num">{duration(slo.ttft_p95_ms)}</td>
                <td className="num">{duration(slo.e2e_p95_ms)}</td>
                <td className="num">{slo.max_error_rate == null ? "default" : percent(slo.max_error_rate)}</td>
                <td>{slo.residency || "—"}</td>
                <td className="num">{slo.max_usd_per_1k == null ? "—" : usd(slo.max_usd_per_1k, 2)}</td>
                <td className="num"><Attainment value={a ? a.attainment : null} /></td>
                <td className="num">{a ? `${a.met} / ${a.outcomes}` : "0"}</td>
                <td className="num">{open > 0 ? <span className="badge state-open">{open} open</span> : "0"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </section>
  );
}

function BreachRows({ breaches, history }: { breaches: Breach[]; history?: boolean }) {
  return (
    <table className="table dense">
      <thead>
        <tr>
          {history && <th>Status</th>}
          <th>SLO</th>
          <th>Model</th>
          <th>Node</th>
          <th>Metric</th>
          <th className="num">Observed</th>
          <th className="num">Worst</th>
          <th className="num">Target</th>
          <th>Opened</th>
          {history && <th>Resolved</th>}
        </tr>
      </thead>
      <tbody>
        {breaches.map((b) => (
          <tr key={b.id} data-breach={b.id}>
            {history && <td><Badge value={b.status} /></td>}
            <td>{b.slo}</td>
            <td>{b.model}</td>
            <td className="mono"><Link to={`/nodes/${encodeURIComponent(b.node)}`}>{b.node}</Link></td>
            <td>{METRIC_LABELS[b.metric] ?? b.metric}</td>
            <td className="num tone-bad">{formatMetric(b.metric, b.observed)}</td>
            <td className="num">{formatMetric(b.metric, b.worst)}</td>
            <td className="num">{formatMetric(b.metric, b.threshold)}</td>
            <td>{timestamp(b.opened_at)}</td>
            {history && <td>{timestamp(b.resolved_at)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const NO_FILTERS = { status: "", slo: "", node: "", model: "", metric: "" };

function History({ slos, generation }: { slos: Slo[]; generation: number }) {
  const [filters, setFilters] = useState(NO_FILTERS);
  const [offset, setOffset] = useState(0);
  const page = useAsync(
    () => listBreaches({ ...filters, limit: PAGE, offset }),
    [filters, offset, generation],
  );
  const set = (key: keyof typeof NO_FILTERS) => (e: { target: { value: string } }) => {
    setOffset(0);
    setFilters((f) => ({ ...f, [key]: e.target.value }));
  };
  const count = page.data?.count ?? 0;
  return (
    <section className="panel" aria-label="Breach history">
      <header className="panel-header">
        <h2>History</h2>
        <div className="toolbar">
          <label className="field inline"><span>Status</span>
            <select value={filters.status} onChange={set("status")}>
              <option value="">all</option><option>open</option><option>resolved</option>
            </select>
          </label>
          <label className="field inline"><span>SLO</span>
            <select value={filters.slo} onChange={set("slo")}>
              <option value="">all</option>
              {slos.map((s) => <option key={s.name}>{s.name}</option>)}
            </select>
          </label>
          <label className="field inline"><span>Metric</span>
            <select value={filters.metric} onChange={set("metric")}>
              <option value="">all</option>
              {METRICS.map((m) => <option key={m} value={m}>{METRIC_LABELS[m]}</option>)}
            </select>
          </label>
          <label className="field inline"><span>Node</span>
            <input value={filters.node} onChange={set("node")} placeholder="any" size={12} />
          </label>
          <label className="field inline"><span>Model</span>
            <input value={filters.model} onChange={set("model")} placeholder="any" size={12} />
          </label>
        </div>
      </header>
      <ErrorBanner error={page.error} />
      {page.data && page.data.results.length === 0 ? (
        <p className="muted small">No breaches match.</p>
      ) : (
        page.data && <BreachRows breaches={page.data.results} history />
      )}
      <div className="button-row">
        <button type="button" className="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
          Newer
        </button>
        <button type="button" className="button" disabled={offset + PAGE >= count} onClick={() => setOffset(offset + PAGE)}>
          Older
        </button>
        <span className="small muted">
          {count === 0 ? "" : `${offset + 1}–${Math.min(count, offset + PAGE)} of ${count}`}
        </span>
      </div>
    </section>
  );
}

export default function SlosBreaches() {
  const slos = useAsync(listSlos, []);
  const overview = useOverview();
  const [generation, setGeneration] = useState(0);
  const breaches = useOpenBreaches(() => setGeneration((g) => g + 1));
  const open = breaches.open ?? [];

  if (slos.error) return <ErrorBanner error={slos.error} />;
  return (
    <div className="page">
      <header className="page-header">
        <h1>SLOs &amp; breaches</h1>
        <div className="counts">
          <span className={`count ${open.length ? "state-text-down" : ""}`} data-testid="open-breach-count">
            <strong>{open.length}{breaches.truncated ? "+" : ""}</strong> open{" "}
            {open.length === 1 && !breaches.truncated ? "breach" : "breaches"}
          </span>
          <span className="count"><strong>{slos.data?.results.length ?? "…"}</strong> SLOs</span>
        </div>
      </header>
      <ErrorBanner error={overview.error ?? breaches.error} />
      {slos.data && slos.data.results.length === 0 ? (
        <EmptyState title="No SLOs defined">Add them under <Link to="/inventory/slos">Inventory</Link>.</EmptyState>
      ) : (
        slos.data && <SloTable slos={slos.data.results} overview={overview.data} openBySlo={openCountBySlo(open)} />
      )}
      <section className="panel" aria-label="Open breaches" data-testid="open-breaches">
        <header className="panel-header">
          <h2>Open breaches</h2>
          <span className="small muted">Live: windows of the last few minutes per SLO, model and node</span>
        </header>
        {breaches.open === undefined ? (
          <p className="muted small">Loading…</p>
        ) : open.length === 0 ? (
          <p className="muted small">None: every window is within its SLO.</p>
        ) : (
          <div className="table-scroll medium">
            <BreachRows breaches={open} />
          </div>
        )}
      </section>
      <History slos={slos.data?.results ?? []} generation={generation} />
    </div>
  );
}
