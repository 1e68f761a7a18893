import type { Receipt } from "../api/types";
import { duration } from "../lib/format";

export type SplitNote = NonNullable<Receipt["split"]>;
export type ProbeNote = NonNullable<Receipt["probe"]>;

/** The prompt's KV in binary units ("12.0 MiB"), as the inventory states KV capacity in GiB. */
export function kvBytesText(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A transfer within a site takes well under a millisecond: `duration` would say "0 ms". */
function transferText(ms: number): string {
  return ms < 10 ? `${ms.toFixed(1)} ms` : duration(ms);
}

/** Why a split decision (issue #30) paired a prefill node with the decode node: the receipt's
 *  `split` (`optimizer.decide.framework.Split.explain`, docs/decisions.md "Split decisions"). */
export function SplitNoteView({ split, decode }: { split: SplitNote; decode: string }) {
  const mixed = split.estimated_ttft_mixed_ms;
  return (
    <p className="small" data-testid="receipt-split">
      Split: prefill on <span className="mono">{split.prefill_node}</span> (site {split.prefill_site}), decode on{" "}
      <span className="mono">{decode}</span>. The prompt&apos;s KV, {kvBytesText(split.kv_bytes)}, moves to the decode
      node in an estimated {transferText(split.transfer_ms)}; the pair&apos;s estimated TTFT is{" "}
      {duration(split.estimated_ttft_split_ms)},{" "}
      {mixed == null
        ? "where no single node could have answered."
        : `against ${duration(mixed)} for the one-node answer it replaced.`}
    </p>
  );
}

/** An exploration probe's answer (issue #26): the receipt's `probe`
 *  (`console/placement/engine/probing.py`, docs/twin.md "Exploration probe"). */
export function ProbeNoteView({ probe }: { probe: ProbeNote }) {
  // A probe answers only where the node's estimates are within the request's targets
  // (optimizer/decide/pickers/probe.py), so the TTFT is shown beside its target, not flagged.
  return (
    <p className="small" data-testid="receipt-probe">
      <span className="badge state-probe">probe #{probe.id}</span> Answered by the exploration probe, not the policy:
      it sent the request to <span className="mono">{probe.node}</span>, whose estimated TTFT was{" "}
      {duration(probe.ttft_ms)} against the request&apos;s{" "}
      {duration(probe.ttft_target_ms)} target. The policy&apos;s own pick was{" "}
      <span className="mono" data-testid="probe-policy-pick">{probe.policy_pick}</span>; the canary&apos;s figures
      leave this decision out.
    </p>
  );
}
