// The rollout state machine as the console/policies/services.py TRANSITIONS define it, to offer
// only the actions a version's state allows (the server refuses others with 409).

import type { PolicyAction } from "../api/ops";
import type { PolicyState } from "../api/types";

export const ACTION_FROM: Record<PolicyAction, readonly PolicyState[]> = {
  approve: ["candidate"],
  shadow: ["approved"],
  canary: ["approved", "shadow"],
  promote: ["approved", "shadow", "canary"],
  rollback: ["candidate", "approved", "shadow", "canary", "active"],
};

export const ACTION_LABELS: Record<PolicyAction, string> = {
  approve: "Approve",
  shadow: "Shadow",
  canary: "Canary",
  promote: "Promote",
  rollback: "Roll back",
};

export function allowedActions(state: PolicyState): PolicyAction[] {
  return (Object.keys(ACTION_FROM) as PolicyAction[]).filter((a) => ACTION_FROM[a].includes(state));
}

/** Whether a candidate may be evaluated (any state before retirement; re-evaluation is allowed). */
export function canEvaluate(state: PolicyState): boolean {
  return state !== "retired";
}

/** The built-in heuristics (optimizer/policies POLICY_NAMES), offered when registering. */
export const HEURISTICS = [
  "weighted-score",
  "least-loaded",
  "kv-aware",
  "prefix-aware",
  "latency-first",
  "cost-first",
  "data-gravity",
  "round-robin",
  "random",
] as const;
