import { Link, useParams } from "react-router";

import { DecisionDetail } from "../decisions/DecisionDetail";

/** /decisions/<id>: one decision record, its receipt and outcome, at a URL of its own. */
export default function DecisionPage() {
  const { id = "" } = useParams();
  return (
    <div className="page narrow">
      <header className="page-header">
        <div>
          <h1>Decision</h1>
          <p className="muted small">
            <Link to="/decisions/search">Find decisions</Link> · <Link to="/decisions">Live decisions</Link>
          </p>
        </div>
      </header>
      <DecisionDetail id={id} />
    </div>
  );
}
