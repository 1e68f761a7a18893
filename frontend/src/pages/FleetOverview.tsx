import { useMemo } from "react";
import { Link } from "react-router";

import { listNodes, listSites } from "../api/nodes";
import { getBreakers } from "../api/ops";
import { TelemetryLine } from "../components/TelemetryLine";
import type { LatestTelemetry, Node, NodeState, Site, Tier } from "../api/types";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { OpsStrip } from "../components/OpsStrip";
import { StateBadge } from "../components/StateBadge";
import { FleetGrid } from "../fleet/FleetGrid";
import { breachesByNode, nodeHealth, type NodeHealth } from "../fleet/health";
import { useAsync } from "../hooks/useAsync";
import { useLatestTelemetry, useOpenBreaches } from "../hooks/useOps";
import { duration, percent } from "../lib/format";
import { useLiveEvent } from "../live/context";

const TIERS: Tier[] = ["device", "edge", "regional", "cloud"];
const STATES: NodeState[] = ["active", "cordoned", "draining", "down"];

function countStates(nodes: Node[]): Record<NodeState, number> {
  const counts = { active: 0, cordoned: 0, draining: 0, down: 0 };
  for (const node of nodes) counts[node.state] += 1;
  return counts;
}

function StateCounts({ nodes }: { nodes: Node[] }) {
  const counts = countStates(nodes);
  return (
    <div className="counts">
      <span className="count">
        <strong>{nodes.length}</strong> nodes
      </span>
      {STATES.filter((s) => counts[s] > 0).map((state) => (
        <span key={state} className={`count state-text-${state}`}>
          <strong>{counts[state]}</strong> {state}
        </span>
      ))}
    </div>
  );
}

function NodeCard({ node, telemetry, health }: {
  node: Node;
  telemetry: LatestTelemetry | undefined;
  health: NodeHealth;
}) {
  const ttft = telemetry?.ttft_p95_s;
  return (
    <Link
      to={`/nodes/${encodeURIComponent(node.name)}`}
      className={`node-card health-edge-${health.level}`}
      data-node={node.name}
      data-health={health.level}
      title={health.reasons.join(", ") || "healthy"}
    >
      <div className="node-card-head">
        <span className="node-name">{node.name}</span>
        <StateBadge state={node.state} />
      </div>
      <div className="node-figures">
        <span title="Time to first token, 95th percentile, from the node's exporter">
          TTFT p95 <strong>{ttft == null ? "—" : duration(ttft * 1000)}</strong>
        </span>
        <span title="KV-cache use">
          KV <strong>{percent(telemetry?.kv_usage, 0)}</strong>
        </span>
      </div>
      {health.reasons.length > 0 && (
        <div className={`small health-text-${health.level}`}>{health.reasons.join(" · ")}</div>
      )}
      <div className="small muted">
        {node.gpus}× {node.accelerator} · ${node.usd_per_hour.toFixed(2)}/h · {node.models.join(", ")}
      </div>
      <TelemetryLine telemetry={telemetry} />
    </Link>
  );
}

function SiteCard({ site, nodes, telemetry, health }: {
  site: Site;
  nodes: Node[];
  telemetry: Record<string, LatestTelemetry>;
  health: Record<string, NodeHealth>;
}) {
  return (
    <section className="site-card" data-site={site.name}>
      <header>
        <h3>{site.name}</h3>
        <span className="muted small">
          {site.region} · {site.jurisdiction}
        </span>
      </header>
      {nodes.length === 0 ? (
        <p className="muted small">No nodes.</p>
      ) : (
        <div className="node-grid">
          {nodes.map((node) => (
            <NodeCard
              key={node.name}
              node={node}
              telemetry={telemetry[node.name]}
              health={health[node.name]!}
            />
          ))}
        </div>
      )}
    </section>
  );
}

export default function FleetOverview() {
  const fleet = useAsync(
    () => Promise.all([listSites(), listNodes()]).then(([s, n]) => ({ sites: s.results, nodes: n.results })),
    [],
  );
  const telemetry = useLatestTelemetry();
  const breaches = useOpenBreaches();
  const breakers = useAsync(getBreakers, []);
  useLiveEvent("breaker", breakers.reload);
  const nodes = fleet.data?.nodes;
  const health = useMemo(() => {
    const perNode = breachesByNode(breaches.open ?? []);
    const result: Record<string, NodeHealth> = {};
    for (const node of nodes ?? []) {
      result[node.name] = nodeHealth({
        state: node.state,
        telemetry: telemetry.data?.[node.name],
        breaker: breakers.data?.states[node.name],
        openBreaches: perNode[node.name] ?? 0,
      });
    }
    return result;
  }, [nodes, telemetry.data, breakers.data, breaches.open]);

  useLiveEvent("node.state", (event) =>
    fleet.setData((data) =>
      data && {
        ...data,
        nodes: data.nodes.map((n) =>
          n.name === event.node ? { ...n, state: event.state as NodeState } : n,
        ),
      },
    ),
  );
  useLiveEvent("node.freshness", telemetry.reload);

  if (fleet.error) return <ErrorBanner error={fleet.error} />;
  if (!fleet.data) return <p className="muted">Loading the fleet…</p>;
  const { sites } = fleet.data;
  const all = fleet.data.nodes;
  if (sites.length === 0) {
    return (
      <EmptyState title="No sites yet">
        Import a topology or add sites under <Link to="/inventory/topology">Inventory</Link>.
      </EmptyState>
    );
  }

  return (
    <div className="page">
      <header className="page-header">
        <h1>Fleet</h1>
        <StateCounts nodes={all} />
      </header>
      <OpsStrip />
      <FleetGrid nodes={all} health={health} />
      {TIERS.map((tier) => {
        const tierSites = sites.filter((s) => s.tier === tier);
        if (tierSites.length === 0) return null;
        const tierNodes = all.filter((n) => n.tier === tier);
        return (
          <section key={tier} className="tier" data-tier={tier}>
            <header className="tier-header">
              <h2>{tier}</h2>
              <StateCounts nodes={tierNodes} />
            </header>
            <div className="site-grid">
              {tierSites.map((site) => (
                <SiteCard
                  key={site.name}
                  site={site}
                  nodes={tierNodes.filter((n) => n.site === site.name)}
                  telemetry={telemetry.data ?? {}}
                  health={health}
                />
              ))}
            </div>
          </section>
        );
      })}
    </div>
  );
}
