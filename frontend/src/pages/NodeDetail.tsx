import type { ReactNode } from "react";
import { Link, useParams } from "react-router";

import { api } from "../api/client";
import type { LatestTelemetry, Node } from "../api/types";
import { useCan } from "../auth/session";
import { ErrorBanner } from "../components/ErrorBanner";
import { StateBadge } from "../components/StateBadge";
import { TelemetryLine } from "../components/TelemetryLine";
import { useAsync } from "../hooks/useAsync";
import { useLatestTelemetry } from "../hooks/useOps";
import { useLiveEvent } from "../live/context";
import { NodeActions } from "./nodeDetail/NodeActions";
import { NodeCharts } from "./nodeDetail/NodeCharts";

function Properties({ node, telemetry }: { node: Node; telemetry: LatestTelemetry | undefined }) {
  const labels = Object.entries((node.labels ?? {}) as Record<string, string>);
  const exporters = (node.exporter_urls ?? []) as string[];
  const rows: [string, ReactNode][] = [
    ["Telemetry", <TelemetryLine telemetry={telemetry} />],
    ["Site", `${node.site} (${node.tier})`],
    ["Accelerator", `${node.gpus}× ${node.accelerator}`],
    ["Models", node.models.join(", ")],
    ["Role", node.role ?? "mixed"],
    ["Gateway endpoint", node.address || "—"],
    ["Cost", `$${node.usd_per_hour.toFixed(2)} / hour`],
    ["KV-cache capacity", `${node.kv_capacity_gib} GiB`],
    ["State reason", node.state_reason || "—"],
    ["State changed", node.state_changed_at ? new Date(node.state_changed_at).toLocaleString() : "—"],
    ["Labels", labels.length ? labels.map(([k, v]) => `${k}=${v}`).join(", ") : "—"],
    ["Exporters", exporters.length ? exporters.join(", ") : "—"],
  ];
  return (
    <section className="panel">
      <h2>Properties</h2>
      <dl className="properties">
        {rows.map(([term, value]) => (
          <div key={term}>
            <dt>{term}</dt>
            <dd>{value}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

export default function NodeDetail() {
  const { name = "" } = useParams();
  const canAct = useCan("act-on-nodes");
  const node = useAsync(
    () => api.request<Node>(`/api/v1/nodes/${encodeURIComponent(name)}`),
    [name],
  );
  useLiveEvent("node.state", (event) => {
    if (event.node === name) node.reload();
  });
  // Staleness is the first thing an SRE looks for on a misbehaving node: the latest
  // telemetry with its age, refreshed (freshness events come from beat, which only a shared
  // channel layer relays).
  const telemetry = useLatestTelemetry();
  useLiveEvent("node.freshness", (event) => {
    if (event.node === name) telemetry.reload();
  });

  if (node.error) return <ErrorBanner error={node.error} />;
  if (!node.data) return <p className="muted">Loading…</p>;
  return (
    <div className="page">
      <header className="page-header">
        <div>
          <Link to="/" className="muted small">
            ← Fleet
          </Link>
          <h1>
            {node.data.name} <StateBadge state={node.data.state} />
          </h1>
        </div>
      </header>
      <div className="detail-grid">
        <Properties node={node.data} telemetry={telemetry.data?.[name]} />
        {canAct && <NodeActions node={node.data} onChanged={(n) => node.setData(() => n)} />}
      </div>
      <NodeCharts node={node.data.name} />
    </div>
  );
}
