import { useState } from "react";
import { Link } from "react-router";

import { getBurnRates, listBreaches, listSlos } from "../api/ops";
import type { Breach, BurnRates, Overview, Slo, SloAttainment } from "../api/types";
import { Badge } from "../components/Badge";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { OPEN_BREACH_REFRESH_MS, useOpenBreaches, useOverview } from "../hooks/useOps";
import { duration, percent, timestamp, usd } from "../lib/format";
import { breachNodes, formatMetric, formatWindows, METRIC_LABELS, METRICS, openCountBySlo } from "../slos/breaches";
import { sloStanding } from "../slos/standing";

const PAGE = 25;

/** Coloured as the fleet overview's SLO tiles are (slos/standing.ts): red only with an open
 *  breach, amber while below the objective or a rule holds. */
function Attainment({ value, windowS }: { value: SloAttainment | undefined; windowS: number }) {
  if (!value) return <span className="muted">no outcomes</span>;
  const standing = sloStanding(value, windowS);
  return (
    <strong className={standing.tone ? `tone-${standing.tone}` : undefined} title={standing.title}>
      {percent(value.attainment)}
    </strong>
  );
}

/** "page 14.4× over 1 h and 5 min": one rule at the configured period. */
function ruleText(rule: BurnRates["rules"][number]): string {
  const [long, short] = formatWindows(rule.long_window_s, rule.short_window_s).split(" / ");
  return `${rule.severity} ${rule.factor}× over ${long} and ${short}`;
}

/** The SLO's page-rule burn rate over its long window (requests within targets), e.g. "0.6×". */
function pageBurn(burn: BurnRates | undefined, slo: string): string {
  const sli = burn?.slos.find((s) => s.slo === slo && s.sli === "within_targets");
  const page = sli?.rules.find((r) => r.severity === "page");
  return page?.long_burn_rate == null ? "—" : `${page.long_burn_rate.toFixed(1)}×`;
}

function SloTable({ slos, overview, openBySlo, burn }: {
  slos: Slo[];
  overview: Overview | undefined;
  openBySlo: Record<string, number>;
  burn: BurnRates | undefined;
}) {
  const attainment = new Map((overview?.slo_attainment ?? []).map((a) => [a.slo, a]));
  const page = burn?.rules.find((r) => r.severity === "page");
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
            <th className="num" title={page ? `Budget burn over the page rule's long window (${formatWindows(page.long_window_s, page.short_window_s).split(" / ")[0]}): 1× spends the 5% budget of a p95 target exactly` : undefined}>
              Budget burn
            </th>
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
                <td className="num"><Attainment value={a} windowS={overview?.window_s ?? 900} /></td>
                <td className="num">{a ? `${a.met} / ${a.outcomes}` : "0"}</td>
                <td className="num" data-testid={`burn-${slo.name}`}>{pageBurn(burn, slo.name)}</td>
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
          <th>Level</th>
          <th>SLO</th>
          <th>SLI</th>
          <th>Nodes burning the budget</th>
          <th className="num" title="Burn rate over the long window when the breach opened">Burn</th>
          <th className="num">Worst</th>
          <th className="num" title="The rule's burn rate">Rule</th>
          <th title="The rule's long and short windows">Windows</th>
          <th>Opened</th>
          {history && <th>Resolved</th>}
        </tr>
      </thead>
      <tbody>
        {breaches.map((b) => (
          <tr key={b.id} data-breach={b.id}>
            {history && <td><Badge value={b.status} /></td>}
            <td>{b.severity ? <Badge value={b.severity} /> : "—"}</td>
            <td>{b.slo}</td>
            <td>{METRIC_LABELS[b.metric] ?? b.metric}</td>
            <td className="mono">
              {breachNodes(b).map((node, i) => (
                <span key={node}>
                  {i > 0 && ", "}
                  <Link to={`/nodes/${encodeURIComponent(node)}`}>{node}</Link>
                </span>
              ))}
            </td>
            <td className="num tone-bad">{formatMetric(b, b.observed)}</td>
            <td className="num">{formatMetric(b, b.worst)}</td>
            <td className="num">{formatMetric(b, b.threshold)}</td>
            <td>{formatWindows(b.long_window_s, b.short_window_s)}</td>
            <td>{timestamp(b.opened_at)}</td>
            {history && <td>{timestamp(b.resolved_at)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const NO_FILTERS = { status: "", severity: "", slo: "", node: "", metric: "" };

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
          <label className="field inline"><span>Level</span>
            <select value={filters.severity} onChange={set("severity")}>
              <option value="">all</option><option>page</option><option>ticket</option>
            </select>
          </label>
          <label className="field inline"><span>SLO</span>
            <select value={filters.slo} onChange={set("slo")}>
              <option value="">all</option>
              {slos.map((s) => <option key={s.name}>{s.name}</option>)}
            </select>
          </label>
          <label className="field inline"><span>SLI</span>
            <select value={filters.metric} onChange={set("metric")}>
              <option value="">all</option>
              {METRICS.map((m) => <option key={m} value={m}>{METRIC_LABELS[m]}</option>)}
            </select>
          </label>
          <label className="field inline"><span>Node</span>
            <input value={filters.node} onChange={set("node")} placeholder="any" size={12} />
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
  const burn = useAsync(getBurnRates, [generation]);
  useInterval(burn.reload, OPEN_BREACH_REFRESH_MS);
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
        slos.data && <SloTable slos={slos.data.results} overview={overview.data} openBySlo={openCountBySlo(open)} burn={burn.data} />
      )}
      <section className="panel" aria-label="Open breaches" data-testid="open-breaches">
        <header className="panel-header">
          <h2>Open breaches</h2>
          <span className="small muted" data-testid="burn-rules">
            Each SLO's own requests (objective: 95% within its p95 targets), judged by burn-rate rules
            {burn.data ? `: ${burn.data.rules.map(ruleText).join("; ")}` : ""}
          </span>
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
