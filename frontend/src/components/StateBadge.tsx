import type { NodeState } from "../api/types";

export function StateBadge({ state }: { state: NodeState }) {
  return (
    <span className={`badge state-${state}`} data-testid="state-badge">
      {state}
    </span>
  );
}
