// Exploration probes on the Twin page (docs/twin.md, "Exploration probe"): which profiles a
// run could not see, and which step of a probe comes next.
import type { ExplorationProbe } from "../api/types";
import { profileRows } from "./report";

/** The report statuses of a profile the data could not pin down (console/twin/probe_selectors.py). */
export const UNDER_OBSERVED = ["insufficient_data", "not_identifiable"] as const;

/** The profiles of a run's report a probe could send traffic to, as `model@accelerator`. */
export function underObservedProfiles(report: unknown): string[] {
  return profileRows(report)
    .filter((row) => (UNDER_OBSERVED as readonly string[]).includes(row.status))
    .map((row) => row.key);
}

export type ProbeStep = "approve" | "start" | "abort";

/** The steps a probe's state allows, in the order they come (the server checks who may). */
export function probeSteps(state: ExplorationProbe["state"]): ProbeStep[] {
  switch (state) {
    case "proposed":
      return ["approve", "abort"];
    case "approved":
      return ["start", "abort"];
    case "running":
      return ["abort"];
    default:
      return [];
  }
}

/** "sent / budget" and what is left of its share, for the probes table. */
export function probeProgress(probe: Pick<ExplorationProbe, "sent" | "max_requests" | "share">): string {
  return `${probe.sent} / ${probe.max_requests} sent at ${(probe.share * 100).toFixed(2).replace(/\.?0+$/, "")}%`;
}
