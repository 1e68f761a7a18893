import type { PolicyVersion, Rollout } from "../api/types";

export type Arm = NonNullable<Rollout["arms"]>[string];

const points = (fraction: number) => `${fraction >= 0 ? "+" : "−"}${Math.abs(fraction * 100).toFixed(2)}`;

/** "canary − active +0.23 pt (95%: −0.71 to +1.17)": the attainment difference and Newcombe's
 * interval (docs/rollouts.md "Watching a canary"); empty before both arms have outcomes. */
export function attainmentGap(compared: Rollout["canary_vs_active"]): string {
  if (!compared) return "";
  const [low, high] = compared.slo_attainment_difference_95;
  return `canary − active ${points(compared.slo_attainment_difference)} pt (95%: ${points(low)} to ${points(high)})`;
}

export const VERDICT_WORDS = { winning: "Winning", losing: "Losing", undecided: "Not yet decided" } as const;

/** "12 min 5 s" for an elapsed time in seconds. */
export function elapsed(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h) return `${h} h ${m} min`;
  return m ? `${m} min ${s % 60} s` : `${s % 60} s`;
}

/** The headline cost: "$1.234 / 1k served (attributed) · 0.97× active", or why there is none. */
export function headlineCost(cost: Rollout["cost"]): string {
  if (!cost || cost.canary_usd_per_1k == null) return "no served request attributed yet";
  const ratio = cost.canary_vs_active == null ? "" : ` · ${cost.canary_vs_active.toFixed(2)}× active`;
  return `$${cost.canary_usd_per_1k.toFixed(3)} / 1k served (attributed)${ratio}`;
}

/** The decision-time estimate's ratio, secondary to the attributed cost. */
export function estimatedCost(cost: Rollout["cost"]): string {
  if (!cost || cost.estimated_canary_vs_active == null) return "";
  return `estimate at decision time: ${cost.estimated_canary_vs_active.toFixed(2)}× active`;
}

const WATCHDOG_WORDS = { waiting: "waiting for outcomes", healthy: "healthy", rollback: "would roll back" } as const;

/** "healthy · next check in 12 s": the watchdog's judgement now and when it checks next
 *  (`now` in ms since the epoch). */
export function watchdogLine(watchdog: Rollout["watchdog"], now: number): string {
  if (!watchdog) return "";
  const next = watchdog.next_check_at
    ? `next check in ${elapsed((Date.parse(watchdog.next_check_at) - now) / 1000)}`
    : `checks every ${watchdog.period_s.toFixed(0)} s (no check of this canary seen yet)`;
  return `${WATCHDOG_WORDS[watchdog.state]} · ${next}`;
}

/** The version a rollout is about: the canary, else the shadow, else null. */
export function versionInRollout(rollout: Rollout, versions: PolicyVersion[]): PolicyVersion | null {
  const key = rollout.canary ?? rollout.shadow;
  return versions.find((v) => `${v.name}@${v.version}` === key) ?? null;
}

/** A list of numbers typed as "0, 1, 2"; null when any item is not a number. */
export function parseNumbers(text: string): number[] | null {
  const items = text.split(/[\s,]+/).filter(Boolean);
  const values = items.map(Number);
  return items.length && values.every((v) => Number.isFinite(v)) ? values : null;
}
