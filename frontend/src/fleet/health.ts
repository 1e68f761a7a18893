// How a node is doing, in one of five colours for the fleet grid and the node cards
// (docs/dashboard.md, "Colours"): the worst condition wins, every condition is listed.
import type { Breach, LatestTelemetry, NodeState } from "../api/types";
import { breachNodes } from "../slos/breaches";

export type Health = "down" | "bad" | "out" | "warn" | "ok";

export interface NodeHealth {
  level: Health;
  /** Every condition found, worst first, for tooltips. */
  reasons: string[];
}

export interface HealthInput {
  state: NodeState;
  telemetry: LatestTelemetry | undefined;
  /** The breaker's state from GET /breakers ("closed", "open", "half_open"), if known. */
  breaker: string | undefined;
  openBreaches: number;
}

/** KV-cache use from which a node is close to refusing sequences (vLLM preempts near 100%). */
export const KV_HOT = 0.9;

const ORDER: Health[] = ["down", "bad", "out", "warn", "ok"];

export function nodeHealth({ state, telemetry, breaker, openBreaches }: HealthInput): NodeHealth {
  const found: [Health, string][] = [];
  if (state === "down") found.push(["down", "marked down"]);
  if (breaker === "open") found.push(["bad", "breaker open"]);
  if (openBreaches > 0) {
    found.push(["bad", `${openBreaches} open breach${openBreaches === 1 ? "" : "es"}`]);
  }
  if (state === "draining" || state === "cordoned") found.push(["out", state]);
  if (breaker === "half_open") found.push(["warn", "breaker half-open"]);
  if (!telemetry) found.push(["warn", "no telemetry"]);
  else {
    if (telemetry.stale) found.push(["warn", `telemetry stale (${Math.round(telemetry.age_s)} s)`]);
    if (telemetry.kv_usage !== null && telemetry.kv_usage >= KV_HOT) {
      found.push(["warn", `KV ${Math.round(telemetry.kv_usage * 100)}%`]);
    }
  }
  found.sort((a, b) => ORDER.indexOf(a[0]) - ORDER.indexOf(b[0]));
  return { level: found[0]?.[0] ?? "ok", reasons: found.map(([, why]) => why) };
}

/** Open breaches counted per node they name (the nodes that burned the SLO's budget). */
export function breachesByNode(
  breaches: readonly Pick<Breach, "nodes" | "node">[],
): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const b of breaches) {
    for (const node of breachNodes(b)) counts[node] = (counts[node] ?? 0) + 1;
  }
  return counts;
}
