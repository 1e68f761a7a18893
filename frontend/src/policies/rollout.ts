import type { Rollout } from "../api/types";

export type Arm = NonNullable<Rollout["arms"]>[string];

/** " · $X.XXX / 1k est. · $Y.YYY / 1k attributed" for an arm's estimated cost (decision
 * receipts) and attributed cost (measured; docs/operations.md "Watching a canary"), each left
 * out when the API has none. */
export function armCost(arm: Arm): string {
  const est = arm.estimated_usd_per_1k;
  const attributed = arm.attributed_usd_per_1k;
  return (
    (est == null ? "" : ` · $${est.toFixed(3)} / 1k est.`) +
    (attributed == null ? "" : ` · $${attributed.toFixed(3)} / 1k attributed`)
  );
}
