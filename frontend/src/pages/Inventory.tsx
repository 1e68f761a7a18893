import { NavLink, useParams } from "react-router";

import { useCan } from "../auth/session";
import { EmptyState } from "../components/EmptyState";
import { ResourceTable } from "../inventory/ResourceTable";
import { RESOURCES } from "../inventory/specs";
import { TopologyPanel } from "../inventory/TopologyPanel";

const TOPOLOGY = "topology";

export default function Inventory() {
  const { kind = RESOURCES[0]!.key } = useParams();
  const canEdit = useCan("edit-inventory");
  const spec = RESOURCES.find((r) => r.key === kind);
  return (
    <div className="page">
      <header className="page-header">
        <h1>Inventory</h1>
        {!canEdit && <span className="muted small">Read only: editing needs the operator role.</span>}
      </header>
      <nav className="tabs" aria-label="Inventory">
        {RESOURCES.map((r) => (
          <NavLink key={r.key} to={`/inventory/${r.key}`}>
            {r.title}
          </NavLink>
        ))}
        <NavLink to={`/inventory/${TOPOLOGY}`}>Import / export</NavLink>
      </nav>
      {kind === TOPOLOGY ? (
        <TopologyPanel />
      ) : spec ? (
        <ResourceTable key={spec.key} spec={spec} />
      ) : (
        <EmptyState title={`No inventory resource called “${kind}”`} />
      )}
    </div>
  );
}
