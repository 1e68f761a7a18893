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

const points = (fraction: number) => `${fraction >= 0 ? "+" : "−"}${Math.abs(fraction * 100).toFixed(2)}`;

/** " · canary − active +0.23 pt (95%: −0.71 to +1.17)": the attainment difference and its
 * interval (docs/operations.md "Watching a canary"); empty before both arms have outcomes. */
export function attainmentGap(compared: Rollout["canary_vs_active"]): string {
  if (!compared) return "";
  const [low, high] = compared.slo_attainment_difference_95;
  return ` · canary − active ${points(compared.slo_attainment_difference)} pt (95%: ${points(low)} to ${points(high)})`;
}
