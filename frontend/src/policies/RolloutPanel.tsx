import type { ReactNode } from "react";

import type { PolicyVersion, Rollout, ShadowStats } from "../api/types";
import { duration, percent } from "../lib/format";
import { armCost, attainmentGap } from "./rollout";

function Slot({ label, value, children }: { label: string; value: string | null; children?: ReactNode }) {
  return (
    <div className={`slot ${value ? "" : "empty"}`} data-slot={label.toLowerCase()}>
      <span className="tile-label">{label}</span>
      <span className="slot-value mono">{value ?? "none"}</span>
      {children}
    </div>
  );
}

/** Who serves traffic now (GET /rollout), with live arm figures and shadow agreement. */
export function RolloutPanel({ rollout, versions }: { rollout: Rollout; versions: PolicyVersion[] }) {
  const byKey = new Map(versions.map((v) => [`${v.name}@${v.version}`, v]));
  const shadow = rollout.shadow ? (byKey.get(rollout.shadow)?.shadow as ShadowStats | null | undefined) : null;
  const arms = rollout.arms ?? {};
  return (
    <section className="panel rollout" aria-label="Rollout" data-testid="rollout">
      <Slot label="Active" value={rollout.active}>
        {arms.active && (
          <span className="small muted">
            {arms.active.outcomes} outcomes · {percent(arms.active.slo_attainment)} SLO ·{" "}
            {arms.active.breached_groups}/{arms.active.groups} groups breached
            {armCost(arms.active)}
          </span>
        )}
      </Slot>
      <Slot label="Shadow" value={rollout.shadow}>
        {rollout.shadow && (
          <span className="small muted" data-testid="shadow-agreement">
            {shadow && shadow.compared > 0
              ? `agrees on ${percent(shadow.agreement)} of ${shadow.compared.toLocaleString()} requests · predicted TTFT Δ ${duration(Math.abs(shadow.mean_predicted_ttft_delta_ms ?? 0))} ${(shadow.mean_predicted_ttft_delta_ms ?? 0) <= 0 ? "faster" : "slower"}`
              : "no live requests compared yet"}
          </span>
        )}
      </Slot>
      <Slot label="Canary" value={rollout.canary}>
        {rollout.canary && (
          <span className="small muted" data-testid="canary-share">
            {percent(rollout.canary_share, 0)} of traffic
            {arms.canary &&
              ` · ${arms.canary.outcomes} outcomes · ${percent(arms.canary.slo_attainment)} SLO · ${arms.canary.breached_groups}/${arms.canary.groups} groups breached${armCost(arms.canary)}${attainmentGap(rollout.canary_vs_active)}`}
          </span>
        )}
      </Slot>
    </section>
  );
}
