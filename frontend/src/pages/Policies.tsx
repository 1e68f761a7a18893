import { useState } from "react";
import { useSearchParams } from "react-router";

import { getRollout, listPolicies, listTransitions } from "../api/ops";
import type { PolicyEvaluation, PolicyTransition, PolicyVersion, ShadowStats } from "../api/types";
import { useCan } from "../auth/session";
import { Badge, ProgressBar } from "../components/Badge";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { duration, percent, timestamp } from "../lib/format";
import { useLiveEvent } from "../live/context";
import { ActionsPanel } from "../policies/ActionsPanel";
import { RegisterForm } from "../policies/RegisterForm";
import { ReportView } from "../policies/ReportView";
import { RolloutPanel } from "../policies/RolloutPanel";
import { versionInRollout } from "../policies/rollout";

const POLL_MS = 2000;
const ROLLOUT_POLL_MS = 5000;
const key = (v: PolicyVersion) => `${v.name}@${v.version}`;

function evaluationOf(v: PolicyVersion): PolicyEvaluation | null {
  return (v.latest_evaluation as PolicyEvaluation | null) ?? null;
}

/** Names for the specs a report uses: trained scorers by version, the baseline by its label. */
function specLabels(version: PolicyVersion, versions: PolicyVersion[], evaluation: PolicyEvaluation) {
  const labels: Record<string, string> = {};
  for (const v of versions) if (v.kind === "learned" && v.artifact_dir) labels[v.artifact_dir] = key(v);
  const report = evaluation.report as { candidate?: string; baseline?: string } | undefined;
  if (report?.baseline && !labels[report.baseline]) labels[report.baseline] = evaluation.baseline;
  if (report?.candidate) labels[report.candidate] = key(version);
  return labels;
}

function VersionTable({ versions, selected, onSelect }: {
  versions: PolicyVersion[];
  selected: number | null;
  onSelect: (id: number) => void;
}) {
  return (
    <table className="table dense clickable" data-testid="policy-versions">
      <thead>
        <tr>
          <th>Version</th>
          <th>State</th>
          <th>Evaluation</th>
          <th>Registered</th>
        </tr>
      </thead>
      <tbody>
        {versions.map((v) => {
          const evaluation = evaluationOf(v);
          return (
            <tr
              key={v.id}
              data-policy={key(v)}
              className={v.id === selected ? "selected" : ""}
              onClick={() => onSelect(v.id)}
              tabIndex={0}
              onKeyDown={(e) => e.key === "Enter" && onSelect(v.id)}
            >
              <td>
                <span className="mono">{key(v)}</span>
                <div className="small muted">{v.kind === "learned" ? "trained scorer" : `heuristic ${v.heuristic}`}</div>
              </td>
              <td><Badge value={v.state ?? "candidate"} testId="policy-state" /></td>
              <td>{evaluation ? <Badge value={evaluation.status ?? "queued"} /> : <span className="muted">none</span>}</td>
              <td className="small wrap">
                {v.registered_by || "system"}
                <div className="muted">{timestamp(v.registered_at)}</div>
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function EvaluationSection({ version, versions }: { version: PolicyVersion; versions: PolicyVersion[] }) {
  const evaluation = evaluationOf(version);
  if (!evaluation) {
    return <p className="muted small">Not evaluated yet: approval needs a succeeded evaluation.</p>;
  }
  const status = evaluation.status ?? "queued";
  return (
    <div className="evaluation" data-testid="evaluation">
      <p className="small">
        <Badge value={status} testId="evaluation-status" /> against <strong>{evaluation.baseline}</strong>{" "}
        and every heuristic · loads {(evaluation.loads as number[] | undefined)?.join(", ")}× · seeds{" "}
        {(evaluation.seeds as number[] | undefined)?.join(", ")} · trace{" "}
        <span className="mono">{evaluation.trace.split("/").pop()}</span> · {timestamp(evaluation.created_at)}
      </p>
      {(status === "queued" || status === "running") && (
        <ProgressBar value={evaluation.progress ?? 0} label="Evaluation progress" />
      )}
      {evaluation.error && <ErrorBanner error={evaluation.error} />}
      {status === "succeeded" && (
        <ReportView report={evaluation.report} labels={specLabels(version, versions, evaluation)} />
      )}
    </div>
  );
}

function VersionDetail({ version }: { version: PolicyVersion }) {
  const shadow = version.shadow as ShadowStats | null;
  const rows: [string, string][] = [
    ["Kind", version.kind === "learned" ? `trained scorer · ${version.artifact_dir}` : `heuristic · ${version.heuristic}`],
    ["Registered", `${version.registered_by || "system"} · ${timestamp(version.registered_at)}`],
    ["Approved", version.approved_by ? `${version.approved_by} · ${timestamp(version.approved_at)}` : "—"],
    ["State since", timestamp(version.state_changed_at)],
    ["Canary share", percent(version.canary_share, 0)],
    [
      "Shadow agreement",
      shadow && shadow.compared
        ? `${percent(shadow.agreement)} of ${shadow.compared.toLocaleString()} live requests · mean predicted TTFT Δ ${duration(shadow.mean_predicted_ttft_delta_ms)}`
        : "—",
    ],
  ];
  return (
    <section className="panel" aria-label="Policy version" data-testid="policy-detail">
      <header className="panel-header">
        <h2>
          <span className="mono">{key(version)}</span> <Badge value={version.state ?? "candidate"} testId="detail-state" />
        </h2>
      </header>
      <dl className="properties">
        {rows.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

function AuditTrail({ transitions }: { transitions: PolicyTransition[] }) {
  return (
    <section className="panel" aria-label="Audit trail">
      <h2>Audit trail</h2>
      {transitions.length === 0 ? (
        <p className="muted small">No transitions yet.</p>
      ) : (
        <table className="table dense" data-testid="audit-trail">
          <thead>
            <tr>
              <th>When</th>
              <th>Version</th>
              <th>Transition</th>
              <th>By</th>
              <th>Reason</th>
            </tr>
          </thead>
          <tbody>
            {transitions.map((t) => (
              <tr key={t.id}>
                <td className="small">{timestamp(t.at)}</td>
                <td className="mono">{t.policy}</td>
                <td>
                  {t.from_state ? <Badge value={t.from_state} /> : <span className="muted">new</span>} →{" "}
                  <Badge value={t.to_state} />
                </td>
                <td>{t.actor}</td>
                <td className="wrap">{t.reason || "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

export default function Policies() {
  const canApprove = useCan("approve-policies");
  const [params, setParams] = useSearchParams();
  const [registering, setRegistering] = useState(false);
  const data = useAsync(
    () =>
      Promise.all([listPolicies(), listTransitions()]).then(([p, t]) => ({
        versions: p.results,
        transitions: t.results,
      })),
    [],
  );
  const rolloutData = useAsync(getRollout, []);
  const reloadAll = () => {
    data.reload();
    rolloutData.reload();
  };
  useLiveEvent("policy.transition", reloadAll);
  // Outcomes send no event of their own: while a canary runs its figures are polled, and the
  // clock the elapsed time and the watchdog's next check are read against ticks with them.
  const rollout = rolloutData.data;
  const [now, setNow] = useState(() => Date.now());
  useInterval(
    () => {
      rolloutData.reload();
      setNow(Date.now());
    },
    ROLLOUT_POLL_MS,
    Boolean(rollout?.canary),
  );

  const versions = data.data?.versions ?? [];
  // The version in rollout (the canary, else the shadow) unless one was chosen.
  const inRollout = rollout ? versionInRollout(rollout, versions) : null;
  const selectedId = Number(params.get("version")) || inRollout?.id || versions[0]?.id || null;
  const selected = versions.find((v) => v.id === selectedId) ?? null;
  const select = (id: number) => setParams({ version: String(id) }, { replace: true });
  const reload = reloadAll;

  // Evaluations run on a worker and send no live event: poll while one is under way.
  const pending = versions.some((v) => ["queued", "running"].includes(evaluationOf(v)?.status ?? ""));
  useInterval(data.reload, POLL_MS, pending);

  const error = (data.error && !data.data) || (rolloutData.error && !rollout);
  if (error) return <ErrorBanner error={data.error ?? rolloutData.error} />;
  if (!data.data || !rollout) return <p className="muted">Loading policies…</p>;

  return (
    <div className="page">
      <header className="page-header">
        <h1>Policies</h1>
        <div className="toolbar">
          {!canApprove && <span className="muted small">Read only: rollout actions need the admin role.</span>}
          {canApprove && !registering && (
            <button type="button" className="button" onClick={() => setRegistering(true)}>
              Register a version
            </button>
          )}
        </div>
      </header>
      <RolloutPanel rollout={rollout} versions={versions} now={now} />
      {canApprove && registering && (
        <RegisterForm
          onCancel={() => setRegistering(false)}
          onRegistered={(v) => {
            setRegistering(false);
            reload();
            select(v.id);
          }}
        />
      )}
      {versions.length === 0 ? (
        <EmptyState title="No policy versions registered">
          The engine serves its configured default heuristic ({rollout.active}).
        </EmptyState>
      ) : (
        <div className="policies-grid">
          <section className="panel" aria-label="Versions">
            <h2>Versions</h2>
            <VersionTable versions={versions} selected={selectedId} onSelect={select} />
          </section>
          <div className="side-stack">
            {selected && canApprove && <ActionsPanel key={selected.id} version={selected} onChanged={reload} defaults={rollout.evaluation_defaults} />}
            {selected && <VersionDetail version={selected} />}
          </div>
        </div>
      )}
      {selected && (
        <section className="panel" aria-label="Evaluation report">
          <h2>
            Evaluation report · <span className="mono">{key(selected)}</span>
          </h2>
          <EvaluationSection version={selected} versions={versions} />
        </section>
      )}
      <AuditTrail transitions={data.data.transitions} />
    </div>
  );
}
