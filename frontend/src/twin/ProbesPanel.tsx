// The Twin page's exploration probes (docs/twin.md, "Exploration probe"): the probes with
// their progress and each target's why, a form proposing one from the selected run's
// under-observed profiles and held values, and each probe's next step. Admins act; the server
// enforces the four-eyes rules.
import { useState } from "react";

import { listProbes, proposeProbe, stepProbe } from "../api/ops";
import type { CalibrationRun, ExplorationProbe } from "../api/types";
import { useCan } from "../auth/session";
import { Badge } from "../components/Badge";
import { ErrorBanner } from "../components/ErrorBanner";
import { useSubmit } from "../components/FormPanel";
import { useAsync } from "../hooks/useAsync";
import { useInterval } from "../hooks/useInterval";
import { timestamp } from "../lib/format";
import { useLiveEvent } from "../live/context";
import { probeProgress, probeSteps, probeTargetLabel, underObservedProfiles, type ProbeStep } from "./probes";

const REFRESH_MS = 5_000;

function ProposeForm({ run, onDone }: { run: CalibrationRun; onDone: () => void }) {
  const [share, setShare] = useState("0.01");
  const [maxRequests, setMaxRequests] = useState("1000");
  const [hours, setHours] = useState("24");
  const [reason, setReason] = useState("");
  const state = useSubmit(
    () =>
      proposeProbe({
        calibration_run: run.id,
        share: Number(share),
        max_requests: Number(maxRequests),
        hours: Number(hours),
        reason,
      }),
    onDone,
  );
  return (
    <form onSubmit={state.submit} className="button-row" aria-label="Propose a probe" data-testid="probe-form">
      <label className="field">
        <span>Share (≤ 0.05)</span>
        <input type="number" min={0.0001} max={0.05} step="any" value={share} onChange={(e) => setShare(e.target.value)} />
      </label>
      <label className="field">
        <span>Budget (requests)</span>
        <input type="number" min={1} value={maxRequests} onChange={(e) => setMaxRequests(e.target.value)} />
      </label>
      <label className="field">
        <span>Hours</span>
        <input type="number" min={0.01} step="any" value={hours} onChange={(e) => setHours(e.target.value)} />
      </label>
      <input aria-label="Probe reason" placeholder="Reason (kept in the audit trail)" value={reason} onChange={(e) => setReason(e.target.value)} />
      <button type="submit" className="button primary" disabled={state.busy}>
        Propose a probe
      </button>
      <ErrorBanner error={state.error} />
    </form>
  );
}

function Steps({ probe, onDone }: { probe: ExplorationProbe; onDone: () => void }) {
  const [reason, setReason] = useState("");
  const [verb, setVerb] = useState<ProbeStep>("abort");
  const state = useSubmit(() => stepProbe(probe.id, verb, reason), onDone);
  const steps = probeSteps(probe.state);
  if (steps.length === 0) return null;
  return (
    <form onSubmit={state.submit} className="button-row">
      <input aria-label={`Reason for probe ${probe.id}`} placeholder="Reason" value={reason} onChange={(e) => setReason(e.target.value)} />
      {steps.map((step) => (
        <button
          key={step}
          type="submit"
          className={step === "abort" ? "button ghost" : "button primary"}
          disabled={state.busy}
          onClick={() => setVerb(step)}
        >
          {step[0]!.toUpperCase() + step.slice(1)}
        </button>
      ))}
      <ErrorBanner error={state.error} />
    </form>
  );
}

export function ProbesPanel({ run }: { run: CalibrationRun | null }) {
  const canAct = useCan("run-probes");
  const probes = useAsync(listProbes, []);
  const reload = probes.reload;
  useLiveEvent("probe.transition", reload);
  const list = probes.data?.results ?? [];
  useInterval(reload, REFRESH_MS, list.some((p) => p.state === "running"));
  const unseen = run && run.status === "succeeded" ? underObservedProfiles(run.report) : [];
  return (
    <section className="panel" aria-label="Exploration probes" data-testid="probes">
      <h2>Exploration probes</h2>
      <p className="muted small">
        A small share of live decisions sent to nodes whose profiles the twin could not see, or of which it held a value
        for want of data, only where the constraints and the SLO allow, until its budget is spent. Proposed by one admin,
        approved by another.
      </p>
      {run && unseen.length > 0 && (
        <>
          <p className="small" data-testid="under-observed">
            Run #{run.id} could not see: {unseen.join(", ")}
          </p>
          {canAct && <ProposeForm run={run} onDone={reload} />}
        </>
      )}
      <ErrorBanner error={probes.error} />
      {list.length > 0 && (
        <table className="table dense" data-testid="probe-list">
          <thead>
            <tr>
              <th>Probe</th>
              <th>State</th>
              <th>Targets</th>
              <th>Progress</th>
              <th>Ends</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.map((probe) => (
              <tr key={probe.id} data-probe={probe.id}>
                <td>#{probe.id}</td>
                <td>
                  <Badge value={probe.state} />
                  {probe.outcome && <div className="small muted">{probe.outcome}</div>}
                </td>
                <td className="small">
                  {probe.targets.map((t) => (
                    <div key={`${t.node}/${t.model}`} title={t.held.map((h) => h.reason).filter(Boolean).join("; ")}>
                      {probeTargetLabel(t)}
                    </div>
                  ))}
                </td>
                <td className="small">{probeProgress(probe)}</td>
                <td className="small">{probe.ends_at ? timestamp(probe.ends_at) : "—"}</td>
                <td>{canAct && <Steps probe={probe} onDone={reload} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
