import { useState } from "react";
import { Link, useSearchParams } from "react-router";

import { listPolicies, listTrainingRuns, startTrainingRun } from "../api/ops";
import type { TrainingRun } from "../api/types";
import { useCan } from "../auth/session";
import { Badge, ProgressBar } from "../components/Badge";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { FormPanel, useSubmit } from "../components/FormPanel";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { timestamp } from "../lib/format";
import { useLiveEvent } from "../live/context";
import { LearningCurveChart } from "../components/LearningCurveChart";
import { learningCurve } from "../training/curve";
import { applyProgress, flattenFigures } from "../training/runs";

function StartForm({ onStarted }: { onStarted: (run: TrainingRun) => void }) {
  // The API needs an explicit budget (an empty body once started a 500,000-step run):
  // the form proposes the demo's budget and sends whatever the admin leaves there.
  const [timesteps, setTimesteps] = useState("50000");
  const [seed, setSeed] = useState("0");
  const [trace, setTrace] = useState("");
  const [init, setInit] = useState<"generalist" | "imitation">("generalist");
  const [override, setOverride] = useState(false);
  const state = useSubmit(
    () =>
      startTrainingRun({
        seed: Number(seed),
        timesteps: Number(timesteps),
        init,
        register_below_baseline: override,
        ...(trace ? { trace } : {}),
      }),
    onStarted,
  );

  return (
    <FormPanel
      title="Start a training run"
      submitLabel="Start training"
      state={state}
      extra={
        <span className="small muted">
          PPO on the inventory’s fleet; the result is registered as a candidate version that another admin must evaluate and approve, unless it validates below the best heuristic.
        </span>
      }
    >
      <label className="field">
        <span>Timesteps (the run’s budget)</span>
        <input type="number" min={256} max={5000000} required value={timesteps} onChange={(e) => setTimesteps(e.target.value)} />
      </label>
      <label className="field">
        <span>Seed</span>
        <input type="number" min={0} value={seed} onChange={(e) => setSeed(e.target.value)} />
      </label>
      <label className="field">
        <span>Start from</span>
        <select value={init} onChange={(e) => setInit(e.target.value as "generalist" | "imitation")}>
          <option value="generalist">the generalist policy (fine-tune)</option>
          <option value="imitation">imitation of the SLO-aware teacher</option>
        </select>
      </label>
      <label className="field wide">
        <span>Trace (a file in the traces directory)</span>
        <input placeholder="the fleet’s configured trace" value={trace} onChange={(e) => setTrace(e.target.value)} />
      </label>
      <label className="field wide">
        <span>
          <input type="checkbox" checked={override} onChange={(e) => setOverride(e.target.checked)} /> Register the result even if it validates below the best heuristic
        </span>
      </label>
    </FormPanel>
  );
}

function RunDetail({ run, versionName }: { run: TrainingRun; versionName: string | undefined }) {
  const figures = flattenFigures(run.report);
  const config = flattenFigures(run.config);
  const curve = learningCurve(run.metrics);
  return (
    <section className="panel" aria-label="Training run" data-testid="run-detail">
      <header className="panel-header">
        <h2>
          Run {run.id} <Badge value={run.status ?? "queued"} />
        </h2>
        {run.version != null && (
          <Link to={`/policies?version=${run.version}`} data-testid="run-version">
            {versionName ?? `version ${run.version}`} →
          </Link>
        )}
      </header>
      <dl className="properties">
        <div><dt>Started</dt><dd>{timestamp(run.created_at)}</dd></div>
        <div><dt>Finished</dt><dd>{timestamp(run.finished_at)}</dd></div>
        <div><dt>Artifacts</dt><dd className="mono small">{run.artifact_dir || "—"}</dd></div>
        {config.map(([k, v]) => (
          <div key={k}><dt>{k}</dt><dd className="mono small">{k === "trace" ? v.split("/").pop() : v}</dd></div>
        ))}
      </dl>
      {run.error && <ErrorBanner error={run.error} />}
      {run.below_baseline && (
        <p className="warn-banner" data-testid="below-baseline">
          This run validated below the best heuristic{run.version == null ? ", so it was not registered as a candidate." : "; it was registered by explicit override."}
        </p>
      )}
      {curve.steps.length > 0 && (
        <>
          <h3 className="section-title">Learning curve (validation SLO attainment)</h3>
          <LearningCurveChart curve={curve} />
        </>
      )}
      <h3 className="section-title">Log tail</h3>
      <pre className="log" data-testid="log-tail">{run.log_tail || "No output yet."}</pre>
      {figures.length > 0 && (
        <>
          <h3 className="section-title">Report</h3>
          <table className="table dense">
            <tbody>
              {figures.map(([k, v]) => (
                <tr key={k}><td className="mono small">{k}</td><td className="num">{v}</td></tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

const TRAINING_REFRESH_MS = 5_000;

export default function TrainingRuns() {
  const canStart = useCan("start-training");
  const runs = useAsync(listTrainingRuns, []);
  const versions = useAsync(listPolicies, []);
  const names = new Map((versions.data?.results ?? []).map((v) => [v.id, `${v.name}@${v.version}`]));
  const [params, setParams] = useSearchParams();
  const reload = runs.reload;

  useLiveEvent("training.progress", (event) => {
    runs.setData((page) => page && { ...page, results: applyProgress(page.results, event) });
    const known = runs.data?.results.some((r) => r.id === event.run_id);
    if (!known || event.status === "succeeded" || event.status === "failed") {
      reload();
      versions.reload();
    }
  });

  // Progress events come from the Celery worker, so they reach the browser only through a
  // shared channel layer (Redis); on the embedded defaults, and while disconnected, poll.
  const active = (runs.data?.results ?? []).some((r) => r.status === "queued" || r.status === "running");
  useInterval(reload, TRAINING_REFRESH_MS, active);

  const list = runs.data?.results ?? [];
  const selectedId = Number(params.get("run")) || list[0]?.id || null;
  const selected = list.find((r) => r.id === selectedId) ?? null;
  const select = (id: number) => setParams({ run: String(id) }, { replace: true });

  return (
    <div className="page">
      <header className="page-header">
        <h1>Training runs</h1>
        {!canStart && <span className="muted small">Read only: starting a run needs the admin role.</span>}
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
        <EmptyState title="No training runs yet">
          {canStart ? "Start one above." : "An admin starts them here; progress shows live."}
        </EmptyState>
      ) : (
        <div className="policies-grid">
          <section className="panel" aria-label="Runs">
            <h2>Runs</h2>
            <table className="table dense clickable" data-testid="training-runs">
              <thead>
                <tr>
                  <th>Run</th>
                  <th>Status</th>
                  <th>Progress</th>
                  <th>Started</th>
                  <th>Version</th>
                </tr>
              </thead>
              <tbody>
                {list.map((run) => (
                  <tr
                    key={run.id}
                    data-run={run.id}
                    className={run.id === selectedId ? "selected" : ""}
                    onClick={() => select(run.id)}
                  >
                    <td>#{run.id}</td>
                    <td><Badge value={run.status ?? "queued"} /></td>
                    <td><ProgressBar value={run.progress ?? 0} label={`Run ${run.id} progress`} /></td>
                    <td className="small">{timestamp(run.created_at)}</td>
                    <td>
                      {run.version != null ? (
                        <Link to={`/policies?version=${run.version}`} onClick={(e) => e.stopPropagation()}>
                          {names.get(run.version) ?? `version ${run.version}`}
                        </Link>
                      ) : (
                        "—"
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
          {selected && <RunDetail run={selected} versionName={selected.version != null ? names.get(selected.version) : undefined} />}
        </div>
      )}
    </div>
  );
}
