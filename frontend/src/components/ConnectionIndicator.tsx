import { useConnectionState } from "../live/context";

const LABELS = {
  connecting: "Connecting…",
  connected: "Live",
  reconnecting: "Reconnecting…",
  offline: "Offline",
} as const;

export function ConnectionIndicator() {
  const state = useConnectionState();
  return (
    <span className={`connection connection-${state}`} data-testid="connection" title="Live stream">
      <span className="dot" aria-hidden="true" />
      {LABELS[state]}
    </span>
  );
}
