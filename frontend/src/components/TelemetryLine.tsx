import type { LatestTelemetry } from "../api/types";

/** A node's latest telemetry in one line: load, KV use, age, and "stale" when it is. */
export function TelemetryLine({ telemetry }: { telemetry: LatestTelemetry | undefined }) {
  if (!telemetry) return <span className="muted small">no telemetry</span>;
  const parts = [
    telemetry.running !== null && `${telemetry.running} running`,
    telemetry.queue_depth !== null && `${telemetry.queue_depth} queued`,
    telemetry.kv_usage !== null && `KV ${Math.round(telemetry.kv_usage * 100)}%`,
    `${Math.round(telemetry.age_s)} s old`,
  ].filter(Boolean);
  return (
    <span className={`small ${telemetry.stale ? "warn" : ""}`}>
      {telemetry.stale ? "stale · " : ""}
      {parts.join(" · ")}
    </span>
  );
}
