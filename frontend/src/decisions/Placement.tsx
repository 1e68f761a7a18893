import { placementText, type SampledDecision } from "./feed";

type Row = Pick<SampledDecision, "node" | "prefill_node" | "probe">;

/** The live feed's Node cell: where a decision went ("prefill → decode" when it was split,
 *  issue #30) and, when an exploration probe answered instead of the policy (issue #26), a
 *  badge naming the probe; the row's record has the probe's note (the policy's own pick and
 *  the estimate that let the probe answer). */
export function Placement({ row }: { row: Row }) {
  const split = row.node && row.prefill_node ? `prefill on ${row.prefill_node}, decode on ${row.node}` : undefined;
  return (
    <>
      <span title={split} data-testid={split ? "split" : undefined}>
        {placementText(row)}
      </span>
      {row.probe !== null && (
        <>
          {" "}
          <span
            className="badge state-probe"
            data-testid="probe-badge"
            title={`Answered by exploration probe #${row.probe}, not the policy: open the row for the policy's pick`}
          >
            probe #{row.probe}
          </span>
        </>
      )}
    </>
  );
}
