import { api, ApiError } from "./client";
import type {
  LatestTelemetry,
  Node,
  NodeState,
  NodeStateChange,
  Page,
  Site,
  TelemetrySeries,
} from "./types";

export type NodeAction = "drain" | "cordon" | "uncordon" | "mark-down";

/** The states each action starts from (the server's NODE_TRANSITIONS); others answer 409. */
export const ACTION_FROM: Record<NodeAction, readonly NodeState[]> = {
  drain: ["active", "cordoned"],
  cordon: ["active"],
  uncordon: ["cordoned", "draining", "down"],
  "mark-down": ["active", "cordoned", "draining"],
};

export const ALL = { limit: 1000 };

export const listNodes = () => api.request<Page<Node>>("/api/v1/nodes", { query: ALL });
export const listSites = () => api.request<Page<Site>>("/api/v1/sites", { query: ALL });

export function nodeAction(name: string, action: NodeAction, reason: string): Promise<Node> {
  const path = `/api/v1/nodes/${encodeURIComponent(name)}/${action}`;
  return api.request<Node>(path, { method: "POST", body: { reason } });
}

/** Actions that take a node out of service on purpose; the server refuses them without a
 *  reason (400). */
export const NEEDS_REASON: readonly NodeAction[] = ["drain", "cordon"];

export const nodeStateChanges = (name: string) =>
  api.request<NodeStateChange[]>(`/api/v1/nodes/${encodeURIComponent(name)}/state-changes`);

/** A metric's series over a range (`step` in seconds), or null when the node has no telemetry
 *  API yet (404). */
export async function nodeTelemetry(
  name: string,
  query: { metric: string; from: string; to: string; step: number },
): Promise<TelemetrySeries | null> {
  const path = `/api/v1/nodes/${encodeURIComponent(name)}/telemetry`;
  try {
    return await api.request<TelemetrySeries>(path, { query });
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/** Every reporting node's latest telemetry; empty when the telemetry API is not there. */
export async function latestTelemetry(): Promise<Record<string, LatestTelemetry>> {
  try {
    return await api.request<Record<string, LatestTelemetry>>("/api/v1/telemetry/latest");
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return {};
    throw error;
  }
}
