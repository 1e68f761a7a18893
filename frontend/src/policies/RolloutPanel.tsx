import type { ReactNode } from "react";

import type { PolicyVersion, Rollout, ShadowStats } from "../api/types";
import { duration, percent, timestamp } from "../lib/format";
import { type Arm, attainmentGap, elapsed, estimatedCost, headlineCost, VERDICT_WORDS, watchdogLine } from "./rollout";

function Slot({ label, value, children }: { label: string; value: string | null; children?: ReactNode }) {
  return (
    <div className={`slot ${value ? "" : "empty"}`} data-slot={label.toLowerCase()}>
      <span className="tile-label">{label}</span>
      <span className="slot-value mono">{value ?? "none"}</span>
      {children}
    </div>
  );
}

function ArmLine({ arm, testId }: { arm: Arm | undefined; testId: string }) {
  if (!arm) return <span className="small muted" data-testid={testId}>no outcomes yet</span>;
  return (
    <span className="small muted" data-testid={testId}>
      {arm.outcomes.toLocaleString()} outcomes · {percent(arm.slo_attainment)} SLO met · {arm.breached_groups}/
      {arm.groups} groups breached
    </span>
  );
}

/** The canary's answer to "winning or losing, at what cost" (console/policies/rollout.py):
 *  the verdict with its interval, the elapsed time, the watchdog, and one headline cost. */
function CanaryVerdict({ rollout, now }: { rollout: Rollout; now: number }) {
  const verdict = rollout.verdict?.verdict ?? "undecided";
  const level = verdict === "winning" ? "ok" : verdict === "losing" ? "bad" : "warn";
  const gap = attainmentGap(rollout.canary_vs_active);
  return (
    <div className="canary-verdict" data-testid="canary-verdict" data-verdict={verdict}>
      <div>
        <span className={`badge level-${level}`} data-testid="verdict">{VERDICT_WORDS[verdict]}</span>{" "}
        <span className="small" data-testid="verdict-interval">
          {gap ? `SLO attainment ${gap}` : "both arms need outcomes first"}
        </span>
        <div className="small muted">
          {rollout.verdict?.why} (Newcombe's interval for a difference of proportions) · running for{" "}
          <span data-testid="canary-elapsed">{elapsed(rollout.elapsed_s ?? 0)}</span> since{" "}
          {timestamp(rollout.started_at)}
        </div>
      </div>
      <div>
        <span className="tile-label">Cost</span>{" "}
        <strong data-testid="canary-cost">{headlineCost(rollout.cost)}</strong>
        <div className="small muted" title="The attributed cost prices each served request from its measured latencies and the node's batch while it decoded; the estimate is the engine's decision-time figure, which cannot see the batch a consolidating policy fills.">
          Attributed: measured latencies × node price ÷ the batch it decoded in.{" "}
          <span data-testid="canary-cost-estimate">{estimatedCost(rollout.cost)}</span>
        </div>
      </div>
      {rollout.watchdog && (
        <div>
          <span className="tile-label">Watchdog</span>{" "}
          <span data-testid="watchdog" data-state={rollout.watchdog.state}>{watchdogLine(rollout.watchdog, now)}</span>
          <div className="small muted">
            {rollout.watchdog.said} · judges the last {Math.round(rollout.watchdog.window_s / 60)} min once each arm has{" "}
            {rollout.watchdog.min_outcomes} outcomes
          </div>
        </div>
      )}
    </div>
  );
}

/** Who serves traffic now (GET /rollout), with the canary's verdict and shadow agreement. */
export function RolloutPanel({ rollout, versions, now }: { rollout: Rollout; versions: PolicyVersion[]; now: number }) {
  const byKey = new Map(versions.map((v) => [`${v.name}@${v.version}`, v]));
  const shadow = rollout.shadow ? (byKey.get(rollout.shadow)?.shadow as ShadowStats | null | undefined) : null;
  const arms = rollout.arms ?? {};
  return (
    <section className="panel rollout" aria-label="Rollout" data-testid="rollout">
      <Slot label="Active" value={rollout.active}>
        {rollout.canary && <ArmLine arm={arms.active} testId="active-arm" />}
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
          <>
            <span className="small muted" data-testid="canary-share">{percent(rollout.canary_share, 0)} of traffic</span>
            <ArmLine arm={arms.canary} testId="canary-arm" />
          </>
        )}
      </Slot>
      {rollout.canary && <CanaryVerdict rollout={rollout} now={now} />}
    </section>
  );
}
