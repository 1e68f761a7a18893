import { useState } from "react";

import { evaluatePolicy, policyAction, type PolicyAction } from "../api/ops";
import type { PolicyVersion } from "../api/types";
import { ErrorBanner } from "../components/ErrorBanner";
import { ACTION_FROM, ACTION_LABELS, canEvaluate, fourEyesRule } from "./actions";
import { parseNumbers } from "./rollout";

const HINTS: Record<PolicyAction, string> = {
  approve: "Needs a succeeded evaluation and a person other than the registrant (their keys count as them).",
  shadow: "Score every live request with this version too, without acting on it.",
  canary: "Serve the canary share of live traffic (sticky per session) with this version.",
  promote: "Make this version active; the active one retires.",
  rollback: "Take this version out of service (an active one hands back to its predecessor).",
};

/** Rollout controls for admins; the page renders this only when the user may approve. */
export function ActionsPanel({ version, onChanged, defaults }: {
  version: PolicyVersion;
  onChanged: () => void;
  /** The loads and seeds an evaluation runs by default (GET /rollout `evaluation_defaults`). */
  defaults: { loads: number[]; seeds: number[] };
}) {
  const [reason, setReason] = useState("");
  const [share, setShare] = useState(String(Math.round((version.canary_share ?? 0.1) * 100)));
  const [loads, setLoads] = useState(defaults.loads.join(", "));
  const [seeds, setSeeds] = useState(defaults.seeds.join(", "));
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>();
  const state = version.state ?? "candidate";

  async function run(label: string, work: () => Promise<unknown>) {
    setBusy(label);
    setError(undefined);
    try {
      await work();
      setReason("");
      onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  }

  const act = (action: PolicyAction) =>
    run(action, () =>
      policyAction(version.id, action, {
        reason,
        ...(action === "canary" ? { canary_share: Number(share) / 100 } : {}),
      }),
    );

  const evaluate = async () => {
    const body = { loads: parseNumbers(loads), seeds: parseNumbers(seeds) };
    if (!body.loads || !body.seeds) throw new Error("Loads and seeds are lists of numbers, such as 1, 4 and 0, 1, 2.");
    return evaluatePolicy(version.id, { loads: body.loads, seeds: body.seeds });
  };

  return (
    <section className="panel" data-testid="policy-actions" aria-label="Rollout actions">
      <h2>Rollout actions</h2>
      <p className="small muted" data-testid="four-eyes">
        {fourEyesRule(version)}
      </p>
      <div className="form-grid compact">
        <label className="field wide">
          <span>Reason (required; recorded in the audit trail)</span>
          <input
            value={reason}
            onChange={(e) => setReason(e.target.value)}
            maxLength={1000}
            required
            data-testid="action-reason"
          />
        </label>
        <label className="field">
          <span>Canary share (%)</span>
          <input type="number" min={1} max={100} step={1} value={share} onChange={(e) => setShare(e.target.value)} />
        </label>
        <label className="field">
          <span>Evaluation loads (× trace rate)</span>
          <input value={loads} onChange={(e) => setLoads(e.target.value)} data-testid="evaluation-loads" />
        </label>
        <label className="field">
          <span>Evaluation seeds</span>
          <input value={seeds} onChange={(e) => setSeeds(e.target.value)} data-testid="evaluation-seeds" />
        </label>
      </div>
      <div className="button-row">
        <button
          type="button"
          className="button"
          disabled={busy !== null || !canEvaluate(state)}
          title="Run the simulator: this version against the active policy and every heuristic."
          onClick={() => run("evaluate", () => evaluate())}
        >
          {busy === "evaluate" ? "Evaluating…" : "Evaluate"}
        </button>
        {(Object.keys(ACTION_FROM) as PolicyAction[]).map((action) => (
          <button
            key={action}
            type="button"
            className={`button ${action === "rollback" ? "danger" : action === "promote" ? "primary" : ""}`}
            title={reason.trim() ? HINTS[action] : `Give a reason first. ${HINTS[action]}`}
            disabled={busy !== null || !ACTION_FROM[action].includes(state) || !reason.trim()}
            onClick={() => act(action)}
          >
            {ACTION_LABELS[action]}
          </button>
        ))}
      </div>
      <ErrorBanner error={error} />
    </section>
  );
}
