import { useState } from "react";

import { ACTION_FROM, NEEDS_REASON, nodeAction, type NodeAction } from "../../api/nodes";
import type { Node } from "../../api/types";
import { ErrorBanner } from "../../components/ErrorBanner";

const ACTIONS: { action: NodeAction; label: string; hint: string }[] = [
  { action: "drain", label: "Drain", hint: "Stop new requests; in-flight work finishes." },
  { action: "cordon", label: "Cordon", hint: "Keep out of new placements without draining." },
  { action: "uncordon", label: "Uncordon", hint: "Return the node to service." },
  { action: "mark-down", label: "Mark down", hint: "Declare the node failed." },
];

/** State changes for operators; the page renders this only when the user may act. */
export function NodeActions({ node, onChanged }: { node: Node; onChanged: (node: Node) => void }) {
  const [reason, setReason] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  async function run(action: NodeAction) {
    setBusy(true);
    setError(undefined);
    try {
      onChanged(await nodeAction(node.name, action, reason));
      setReason("");
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="panel" data-testid="node-actions">
      <h2>Actions</h2>
      <label className="field">
        <span>Reason (recorded with your name; required to drain or cordon)</span>
        <input
          value={reason}
          onChange={(e) => setReason(e.target.value)}
          maxLength={500}
          placeholder="e.g. GPU ECC errors, kernel upgrade"
          data-testid="node-action-reason"
        />
      </label>
      <div className="button-row">
        {ACTIONS.map(({ action, label, hint }) => (
          <button
            key={action}
            type="button"
            className={`button ${action === "mark-down" ? "danger" : ""}`}
            title={NEEDS_REASON.includes(action) && !reason.trim() ? `${hint} Give a reason first.` : hint}
            disabled={
              busy ||
              !ACTION_FROM[action].includes(node.state) ||
              (NEEDS_REASON.includes(action) && !reason.trim())
            }
            onClick={() => run(action)}
          >
            {label}
          </button>
        ))}
      </div>
      <ErrorBanner error={error} />
    </section>
  );
}
