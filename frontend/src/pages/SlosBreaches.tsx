import { ComingSoon } from "../components/ComingSoon";

export default function SlosBreaches() {
  return (
    <ComingSoon
      title="SLOs & breaches"
      what="Each SLO's attainment over its windows, and open and resolved breaches."
    />
  );
}
