import { Link } from "react-router";

import { EmptyState } from "../components/EmptyState";

export default function NotFound() {
  return (
    <EmptyState title="No such page">
      <Link to="/">Back to the fleet</Link>
    </EmptyState>
  );
}
