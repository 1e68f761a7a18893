import { Link } from "react-router";

import { useOpenBreaches } from "../hooks/useOps";

/** The header's open-breach count, red while any is open; links to SLOs & breaches. */
export function BreachCount() {
  const { open } = useOpenBreaches();
  const n = open?.length;
  const label = n === undefined ? "breaches …" : `${n} open breach${n === 1 ? "" : "es"}`;
  return (
    <Link
      to="/slos"
      className={`header-pill ${n ? "pill-bad" : "pill-ok"}`}
      data-testid="header-breaches"
      title="SLA breaches open now (SLO windows out of target)"
    >
      {label}
    </Link>
  );
}
