import { ComingSoon } from "../components/ComingSoon";

export default function LiveDecisions() {
  return (
    <ComingSoon
      title="Live decisions"
      what="Placement decisions as they are made: chosen node, fallbacks, policy and latency."
    />
  );
}
