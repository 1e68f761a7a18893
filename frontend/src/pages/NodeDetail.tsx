import type { ReactNode } from "react";
import { Link, useParams } from "react-router";

import { api } from "../api/client";
import { nodeStateChanges } from "../api/nodes";
import type { LatestTelemetry, Node } from "../api/types";
import { useCan } from "../auth/session";
import { ErrorBanner } from "../components/ErrorBanner";
import { StateBadge } from "../components/StateBadge";
import { TelemetryLine } from "../components/TelemetryLine";
import { useAsync } from "../hooks/useAsync";
import { useLatestTelemetry } from "../hooks/useOps";
import { timestamp } from "../lib/format";
import { useLiveEvent } from "../live/context";
import { NodeActions } from "./nodeDetail/NodeActions";
import { NodeCharts } from "./nodeDetail/NodeCharts";
import { NodeWhy } from "./nodeDetail/NodeWhy";

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
    [
      "Last state change",
      node.state_changed_at ? (
        <span data-testid="last-state-change">
          {node.state} by <strong>{node.state_changed_by || "unknown"}</strong> at{" "}
          {timestamp(node.state_changed_at)}
          {node.state_reason ? ` — “${node.state_reason}”` : ""}
        </span>
      ) : (
        "never changed from the console"
      ),
    ],
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

function StateHistory({ name, generation }: { name: string; generation: string | null }) {
  const changes = useAsync(() => nodeStateChanges(name), [name, generation]);
  if (changes.error) return <ErrorBanner error={changes.error} />;
  if (!changes.data || changes.data.length === 0) return null;
  return (
    <section className="panel" aria-label="State changes">
      <h2>State changes</h2>
      <table className="table dense" data-testid="state-history">
        <thead>
          <tr><th>When</th><th>Change</th><th>By</th><th>Reason</th></tr>
        </thead>
        <tbody>
          {changes.data.map((c) => (
            <tr key={`${c.at}-${c.action}`}>
              <td>{timestamp(c.at)}</td>
              <td>{c.action.replace("_", " ")}: {c.from_state} → {c.to_state}</td>
              <td>{c.actor}</td>
              <td>{c.reason || "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
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
      <NodeWhy name={node.data.name} generation={node.data.state_changed_at ?? null} />
      <div className="detail-grid">
        <Properties node={node.data} telemetry={telemetry.data?.[name]} />
        {canAct && <NodeActions node={node.data} onChanged={(n) => node.setData(() => n)} />}
      </div>
      <NodeCharts node={node.data.name} />
      <StateHistory name={node.data.name} generation={node.data.state_changed_at ?? null} />
    </div>
  );
}
