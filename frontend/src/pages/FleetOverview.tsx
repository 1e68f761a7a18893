import { Link } from "react-router";

import { listNodes, listSites } from "../api/nodes";
import { TelemetryLine } from "../components/TelemetryLine";
import type { LatestTelemetry, Node, NodeState, Site, Tier } from "../api/types";
import { EmptyState } from "../components/EmptyState";
import { ErrorBanner } from "../components/ErrorBanner";
import { OpsStrip } from "../components/OpsStrip";
import { StateBadge } from "../components/StateBadge";
import { useAsync } from "../hooks/useAsync";
import { useLatestTelemetry } from "../hooks/useOps";
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

function NodeCard({ node, telemetry }: { node: Node; telemetry: LatestTelemetry | undefined }) {
  return (
    <Link to={`/nodes/${encodeURIComponent(node.name)}`} className="node-card" data-node={node.name}>
      <div className="node-card-head">
        <span className="node-name">{node.name}</span>
        <StateBadge state={node.state} />
      </div>
      <div className="small muted">
        {node.gpus}× {node.accelerator} · ${node.usd_per_hour.toFixed(2)}/h · {node.role ?? "mixed"}
      </div>
      <div className="small">{node.models.join(", ")}</div>
      <TelemetryLine telemetry={telemetry} />
    </Link>
  );
}

function SiteCard({ site, nodes, telemetry }: {
  site: Site;
  nodes: Node[];
  telemetry: Record<string, LatestTelemetry>;
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
            <NodeCard key={node.name} node={node} telemetry={telemetry[node.name]} />
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
  const { sites, nodes } = fleet.data;
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
        <StateCounts nodes={nodes} />
      </header>
      <OpsStrip />
      {TIERS.map((tier) => {
        const tierSites = sites.filter((s) => s.tier === tier);
        if (tierSites.length === 0) return null;
        const tierNodes = nodes.filter((n) => n.tier === tier);
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
                />
              ))}
            </div>
          </section>
        );
      })}
    </div>
  );
}
