// The Twin page's forms: starting a calibration run, and deciding its proposal.
import { useState } from "react";

import { decideProposal, startCalibration } from "../api/ops";
import type { CalibrationRun } from "../api/types";
import { readVerdict } from "./report";
import { useCan } from "../auth/session";
import { ErrorBanner } from "../components/ErrorBanner";
import { FormPanel, useSubmit } from "../components/FormPanel";

export function StartForm({ onStarted }: { onStarted: (run: CalibrationRun) => void }) {
  const [hours, setHours] = useState("1");
  const [minSamples, setMinSamples] = useState("");
  const state = useSubmit(
    () =>
      startCalibration({
        hours: Number(hours),
        ...(minSamples ? { min_samples: Number(minSamples) } : {}),
      }),
    onStarted,
  );
  return (
    <FormPanel
      title="Calibrate against recorded traffic"
      submitLabel="Start calibration"
      state={state}
      extra={
        <span className="small muted">
          Replays the window’s decisions on the nodes that served them and fits each profile to the observed latencies.
        </span>
      }
    >
      <label className="field">
        <span>Last hours</span>
        <input type="number" min={0.01} step="any" value={hours} onChange={(e) => setHours(e.target.value)} />
      </label>
      <label className="field">
        <span>Min samples per profile</span>
        <input type="number" min={1} placeholder="server default" value={minSamples} onChange={(e) => setMinSamples(e.target.value)} />
      </label>
    </FormPanel>
  );
}

export function Proposal({ run, onDecided }: { run: CalibrationRun; onDecided: () => void }) {
  const canDecide = useCan("calibrate");
  const [reason, setReason] = useState("");
  const [verb, setVerb] = useState<"apply" | "discard">("apply");
  const [override, setOverride] = useState(false);
  const verdict = readVerdict(run.verdict);
  // A proposal that does not improve the held-out errors is applied only by an explicit,
  // audited override (the server refuses it otherwise: docs/twin.md).
  const refused = verdict?.verdict !== "improved";
  const state = useSubmit(() => decideProposal(run.id, verb, reason, refused && override), onDecided);
  if (run.proposal !== "pending") return null;
  return (
    <section aria-label="Proposal" data-testid="proposal">
      <h3 className="section-title">
        Proposal: {run.changes.length} profile values
        {run.link_changes.length > 0 && `, ${run.link_changes.length} link bandwidths`}
      </h3>
      {canDecide ? (
        <form onSubmit={state.submit} className="button-row">
          <input aria-label="Reason" placeholder="Reason (kept in the audit trail)" value={reason} onChange={(e) => setReason(e.target.value)} />
          {refused && (
            <label className="small" data-testid="override">
              <input type="checkbox" checked={override} onChange={(e) => setOverride(e.target.checked)} /> Apply although it
              does not improve the held-out errors (override, recorded with your name)
            </label>
          )}
          <button
            type="submit"
            className="button primary"
            disabled={state.busy || (refused && !override)}
            onClick={() => setVerb("apply")}
          >
            Apply to inventory
          </button>
          <button type="submit" className="button ghost" disabled={state.busy} onClick={() => setVerb("discard")}>
            Discard
          </button>
          <ErrorBanner error={state.error} />
        </form>
      ) : (
        <p className="muted small">An operator applies or discards it.</p>
      )}
    </section>
  );
}
