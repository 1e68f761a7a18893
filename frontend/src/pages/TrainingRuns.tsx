import { ComingSoon } from "../components/ComingSoon";

export default function TrainingRuns() {
  return (
    <ComingSoon title="Training runs" what="Training runs with their progress and metrics." />
  );
}
