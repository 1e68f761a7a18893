import { ComingSoon } from "../components/ComingSoon";

export default function Policies() {
  return (
    <ComingSoon
      title="Policies"
      what="Policy versions with their evaluation reports, approval, shadow, canary and rollback."
    />
  );
}
