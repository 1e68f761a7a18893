import { useMemo } from "react";
import { useSearchParams } from "react-router";

import { listCalibrationRuns } from "../api/ops";
import type { CalibrationRun } from "../api/types";
import { useCan } from "../auth/session";
import { Badge, ProgressBar } from "../components/Badge";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { ScatterChart } from "../components/ScatterChart";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { percent, timestamp } from "../lib/format";
import { useLiveEvent } from "../live/context";
import { Proposal, StartForm } from "../twin/forms";
import { ProbesPanel } from "../twin/ProbesPanel";
import {
  PROFILE_FIELDS,
  fidelityRows,
  keptNote,
  linkRows,
  profileRows,
  readVerdict,
  ratio,
  ttftPairs,
  type FittedValue,
} from "../twin/report";

const REFRESH_MS = 5_000;
const FIELD_LABELS: Record<(typeof PROFILE_FIELDS)[number], string> = {
  prefill_tokens_per_s: "prefill tok/s",
  decode_step_ms: "step ms",
  decode_step_ms_per_seq: "per-seq ms",
};

function number(value: number): string {
  if (!Number.isFinite(value)) return "—";
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toPrecision(3);
}

function Interval({ value }: { value: FittedValue }) {
  if (!value.interval) return <span className="muted">—</span>;
  const [lo, hi] = value.interval;
  return (
    <span className="muted small">
      [{lo == null ? "…" : number(lo)}, {hi == null ? "…" : number(hi)}]
    </span>
  );
}

function VerdictLine({ run }: { run: CalibrationRun }) {
  const verdict = readVerdict(run.verdict);
  if (!verdict) return null;
  const improved = verdict.verdict === "improved";
  return (
    <p className={improved ? "small" : "small warning"} data-testid="verdict" data-verdict={verdict.verdict}>
      <Badge value={improved ? "improved" : "no improvement"} /> {verdict.reason}
      {Number.isFinite(verdict.heldOut) && <span className="muted"> ({verdict.heldOut} held-out requests)</span>}
    </p>
  );
}

function Fidelity({ run }: { run: CalibrationRun }) {
  const rows = fidelityRows(run.report);
  if (rows.length === 0) return null;
  return (
    <div className="table-scroll">
    <table className="table dense" data-testid="fidelity">
      <thead>
        <tr>
          <th>Twin error on held-out requests</th>
          <th className="num">median before</th>
          <th className="num">median after</th>
          <th className="num">p95 before</th>
          <th className="num">p95 after</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.metric} data-metric={row.metric}>
            <td>{row.metric === "ttft" ? "Time to first token" : "End to end"}</td>
            <td className="num">{percent(row.before.median)}</td>
            <td className="num"><strong>{percent(row.after.median)}</strong></td>
            <td className="num">{percent(row.before.p95)}</td>
            <td className="num">{percent(row.after.p95)}</td>
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

function Profiles({ run }: { run: CalibrationRun }) {
  const rows = profileRows(run.report);
  if (rows.length === 0) return null;
  return (
    <div className="table-scroll">
    <table className="table dense" data-testid="profiles">
      <thead>
        <tr>
          <th>Profile</th>
          <th className="num">Samples</th>
          {PROFILE_FIELDS.map((f) => (
            <th key={f} className="num" colSpan={2}>{FIELD_LABELS[f]}: nominal → fitted</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={row.key} data-profile={row.key}>
            <td>
              {row.key} {row.status === "insufficient_data" && <span className="muted small">(kept: too little data)</span>}
            </td>
            <td className="num">{row.samples}</td>
            {PROFILE_FIELDS.map((f) => {
              const value = row.values[f];
              const r = ratio(value);
              const moved = row.status === "fitted" && Math.abs(r - 1) >= 0.02;
              const kept = keptNote(value);
              return [
                <td key={`${f}-v`} className="num" data-status={value.status}>
                  {number(value.nominal)} → {moved ? <strong>{number(value.fitted)}</strong> : number(value.fitted)}
                  {moved && <span className="muted small"> ({r.toFixed(2)}×)</span>}
                  {kept && <span className="muted small"> ({kept})</span>}
                </td>,
                <td key={`${f}-i`}><Interval value={value} /></td>,
              ];
            })}
          </tr>
        ))}
      </tbody>
    </table>
    </div>
  );
}

/** The links split requests' KV crossed: each bandwidth nominal → fitted (issue #30). */
function Links({ run }: { run: CalibrationRun }) {
  const rows = linkRows(run.report);
  if (rows.length === 0) return null;
  return (
    <div className="table-scroll">
    <table className="table dense" data-testid="links">
      <thead>
        <tr>
          <th>Link</th>
          <th className="num">KV transfers</th>
          <th className="num" colSpan={2}>bandwidth Gb/s: nominal → fitted</th>
        </tr>
      </thead>
      <tbody>
        {rows.map(({ key, a, b, bandwidth }) => {
          const r = ratio(bandwidth);
          const moved = bandwidth.status === "fitted" && bandwidth.fitted !== bandwidth.nominal;
          const kept = bandwidth.status === "insufficient_data" ? "too few transfers: kept" : keptNote(bandwidth);
          return (
            <tr key={key} data-link={key}>
              <td>{a} ↔ {b}</td>
              <td className="num">{bandwidth.samples}</td>
              <td className="num" data-status={bandwidth.status}>
                {number(bandwidth.nominal)} → {moved ? <strong>{number(bandwidth.fitted)}</strong> : number(bandwidth.fitted)}
                {moved && <span className="muted small"> ({r.toFixed(2)}×)</span>}
                {kept && <span className="muted small"> ({kept})</span>}
              </td>
              <td><Interval value={bandwidth} /></td>
            </tr>
          );
        })}
      </tbody>
    </table>
    </div>
  );
}

function RunDetail({ run, onDecided }: { run: CalibrationRun; onDecided: () => void }) {
  const pairs = useMemo(() => ttftPairs(run.report), [run.report]);
  const series = useMemo(
    () => [
      { label: "nominal fleet", values: pairs.before },
      { label: "calibrated fleet", values: pairs.after },
    ],
    [pairs],
  );
  return (
    <section className="panel" aria-label="Calibration run" data-testid="calibration-detail">
      <header className="panel-header">
        <h2>
          Run {run.id} <Badge value={run.status ?? "queued"} /> {run.proposal && <Badge value={run.proposal} />}
        </h2>
      </header>
      <dl className="properties">
        <div><dt>Window</dt><dd>{timestamp(run.since)} – {timestamp(run.until)}</dd></div>
        <div><dt>Observations</dt><dd>{run.observations ?? 0}</dd></div>
        <div><dt>Requested by</dt><dd>{run.requested_by_name}</dd></div>
        {run.message && <div><dt>Progress</dt><dd className="small">{run.message}</dd></div>}
      </dl>
      {run.error && <ErrorBanner error={run.error} />}
      <VerdictLine run={run} />
      <Fidelity run={run} />
      {pairs.observed.length > 0 && (
        <>
          <h3 className="section-title">Predicted against observed TTFT (ms)</h3>
          <ScatterChart x={pairs.observed} series={series} xLabel="observed" yLabel="predicted" />
        </>
      )}
      <Profiles run={run} />
      <Links run={run} />
      <Proposal run={run} onDecided={onDecided} />
      {run.decisions.length > 0 && (
        <>
          <h3 className="section-title">Audit</h3>
          <ul className="small" data-testid="audit">
            {run.decisions.map((d) => (
              <li key={d.id}>
                {timestamp(d.at)} — <strong>{d.action}</strong>
                {d.override && <strong> over a “no improvement” verdict</strong>} by {d.actor}: {d.reason}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

export default function Twin() {
  const canStart = useCan("calibrate");
  const runs = useAsync(listCalibrationRuns, []);
  const [params, setParams] = useSearchParams();
  const reload = runs.reload;

  useLiveEvent("calibration.progress", (event) => {
    runs.setData(
      (page) =>
        page && {
          ...page,
          results: page.results.map((r) =>
            r.id === event.run_id && typeof event.progress === "number"
              ? { ...r, progress: event.progress, message: String(event.message ?? "") }
              : r,
          ),
        },
    );
    if (event.status === "succeeded" || event.status === "failed") reload();
  });
  // Progress comes from the worker: it reaches the browser only through a shared channel
  // layer, so poll while a run is open.
  const active = (runs.data?.results ?? []).some((r) => r.status === "queued" || r.status === "running");
  useInterval(reload, REFRESH_MS, active);

  const list = runs.data?.results ?? [];
  const selectedId = Number(params.get("run")) || list[0]?.id || null;
  const selected = list.find((r) => r.id === selectedId) ?? null;
  const select = (id: number) => setParams({ run: String(id) }, { replace: true });

  return (
    <div className="page">
      <header className="page-header">
        <h1>Twin</h1>
        <span className="muted small">How far the simulator is from the fleet it advises, and the correction recorded traffic suggests.</span>
      </header>
      {canStart && (
        <StartForm
          onStarted={(run) => {
            reload();
            select(run.id);
          }}
        />
      )}
      <ErrorBanner error={runs.error} />
      {runs.data && list.length === 0 ? (
        <EmptyState title="No calibration runs yet">
          {canStart ? "Start one above over the last hours of recorded traffic." : "An operator starts them here."}
        </EmptyState>
      ) : (
        <div className="policies-grid">
          <section className="panel" aria-label="Runs">
            <h2>Runs</h2>
            <table className="table dense clickable" data-testid="calibration-runs">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Status</th>
                  <th>Progress</th>
                  <th>Proposal</th>
                  <th className="num">TTFT error</th>
                  <th>Started</th>
                </tr>
              </thead>
              <tbody>
                {list.map((run) => {
                  const ttft = fidelityRows(run.report)[0];
                  return (
                    <tr key={run.id} data-run={run.id} className={run.id === selectedId ? "selected" : ""} onClick={() => select(run.id)}>
                      <td>#{run.id}</td>
                      <td><Badge value={run.status ?? "queued"} /></td>
                      <td><ProgressBar value={run.progress ?? 0} label={`Run ${run.id} progress`} /></td>
                      <td>{run.proposal || "—"}</td>
                      <td className="num">{ttft ? `${percent(ttft.before.median)} → ${percent(ttft.after.median)}` : "—"}</td>
                      <td className="small">{timestamp(run.created_at)}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>
          {selected && <RunDetail run={selected} onDecided={reload} />}
        </div>
      )}
      <ProbesPanel run={selected} />
    </div>
  );
}
