// What the header's live indicator says: the stream's connection state, and whether the
// telemetry behind the pages is stale. A connected stream with stale nodes is not "Live"
// and well (issue 13: the fleet went stale for minutes while the header said Live).

import type { LatestTelemetry } from "../api/types";
import type { ConnectionState } from "./stream";

export interface HeaderStatus {
  label: string;
  /** CSS modifier: the connection state, or "stale" when connected with stale telemetry. */
  tone: ConnectionState | "stale";
  title: string;
}

const LABELS: Record<ConnectionState, string> = {
  connecting: "Connecting…",
  connected: "Live",
  reconnecting: "Reconnecting…",
  offline: "Offline",
};

/** Nodes whose latest telemetry is stale (GET /telemetry/latest marks them). */
export function staleNodes(latest: Record<string, LatestTelemetry> | undefined): string[] {
  return Object.entries(latest ?? {})
    .filter(([, t]) => t.stale)
    .map(([node]) => node)
    .sort();
}

export function headerStatus(connection: ConnectionState, stale: string[]): HeaderStatus {
  const title = stale.length
    ? `Live stream ${connection}; stale telemetry from ${stale.join(", ")}`
    : "Live stream";
  if (connection !== "connected" || stale.length === 0) {
    return { label: LABELS[connection], tone: connection, title };
  }
  return { label: `Live · ${stale.length} stale node${stale.length === 1 ? "" : "s"}`, tone: "stale", title };
}
