import { useLatestTelemetry } from "../hooks/useOps";
import { useConnectionState, useLiveEvent } from "../live/context";
import { headerStatus, staleNodes } from "../live/status";

/** The live stream's state, and the count of nodes with stale telemetry: the header must not
 *  say all is well while telemetry is stale. */
export function ConnectionIndicator() {
  const state = useConnectionState();
  const telemetry = useLatestTelemetry();
  // A node going stale or fresh reloads at once instead of waiting for the next poll.
  useLiveEvent("node.freshness", telemetry.reload);
  // Without the viewer role the request fails; the indicator then shows the stream alone.
  const status = headerStatus(state, telemetry.error ? [] : staleNodes(telemetry.data));
  return (
    <span className={`connection connection-${status.tone}`} data-testid="connection" title={status.title}>
      <span className="dot" aria-hidden="true" />
      {status.label}
    </span>
  );
}
