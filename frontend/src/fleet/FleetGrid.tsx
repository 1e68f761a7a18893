import { Link } from "react-router";

import type { Node, Tier } from "../api/types";
import type { NodeHealth } from "./health";

const TIERS: Tier[] = ["device", "edge", "regional", "cloud"];

export const HEALTH_LEGEND: [string, string][] = [
  ["ok", "serving, fresh telemetry"],
  ["warn", "stale or no telemetry, KV ≥ 90%, breaker half-open"],
  ["out", "drained or cordoned"],
  ["bad", "open SLA breach or breaker open"],
  ["down", "marked down"],
];

/** One small cell per node, grouped by tier and coloured by health: a 200-node fleet fits on
 *  one screen. Hover for the node's conditions, click to open it. */
export function FleetGrid({ nodes, health }: { nodes: Node[]; health: Record<string, NodeHealth> }) {
  return (
    <section className="panel fleet-grid" aria-label="Fleet grid" data-testid="fleet-grid">
      <header className="panel-header">
        <h2>Every node</h2>
        <ul className="legend small">
          {HEALTH_LEGEND.map(([level, meaning]) => (
            <li key={level}>
              <span className={`swatch health-${level}`} /> {meaning}
            </li>
          ))}
        </ul>
      </header>
      {TIERS.map((tier) => {
        const members = nodes.filter((n) => n.tier === tier);
        if (members.length === 0) return null;
        return (
          <div key={tier} className="grid-row">
            <span className="grid-tier small muted">{tier}</span>
            <div className="grid-cells">
              {members.map((node) => {
                const h = health[node.name] ?? { level: "ok", reasons: [] };
                const why = h.reasons.length ? h.reasons.join(", ") : "healthy";
                return (
                  <Link
                    key={node.name}
                    to={`/nodes/${encodeURIComponent(node.name)}`}
                    className={`grid-cell health-${h.level}`}
                    data-node={node.name}
                    data-health={h.level}
                    title={`${node.name} (${node.site}): ${why}`}
                    aria-label={`${node.name}: ${why}`}
                  />
                );
              })}
            </div>
          </div>
        );
      })}
    </section>
  );
}
