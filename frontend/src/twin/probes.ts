// Exploration probes on the Twin page (docs/twin.md, "Exploration probe"): which profiles a
// run could not see, and which step of a probe comes next.
import type { ExplorationProbe } from "../api/types";
import { PROFILE_FIELDS, profileRows } from "./report";

/** The report statuses the data could not pin down, of a profile or of one of its values
 * (console/twin/probe_selectors.py). */
export const UNDER_OBSERVED = ["insufficient_data", "not_identifiable"] as const;

function underObserved(status: string): boolean {
  return (UNDER_OBSERVED as readonly string[]).includes(status);
}

/** The held values a probe's lone requests can pin: the prefill rate and the base decode
 * step, not the per-sequence slope (`PROBE_PINS` in console/twin/probe_selectors.py). */
export const PROBE_PINS = ["prefill_tokens_per_s", "decode_step_ms"] as const;

/** The profiles of a run's report a probe could send traffic to, as `model@accelerator`: those
 * the data could not pin down, and those of which it held a value a probe can pin (a prefill
 * rate held beside fitted decode terms leaves the profile `fitted`), with the held values named. */
export function underObservedProfiles(report: unknown): string[] {
  return profileRows(report).flatMap((row) => {
    if (underObserved(row.status)) return [row.key];
    const held = PROFILE_FIELDS.filter((field) => underObserved(row.values[field].status));
    const pinnable = held.some((field) => (PROBE_PINS as readonly string[]).includes(field));
    return pinnable ? [`${row.key} (${held.join(", ")} held)`] : [];
  });
}

type ProbeTarget = ExplorationProbe["targets"][number];

/** A target as the probes table shows it: the pair, and why the run's report made it one. */
export function probeTargetLabel(target: ProbeTarget): string {
  const pair = `${target.node} (${target.model})`;
  const held = target.held.map((h) => `${h.value} ${h.status}`);
  if (held.length > 0) return `${pair}: ${held.join(", ")}`;
  return target.profile_status ? `${pair}: ${target.profile_status}` : pair;
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
