// The rollout state machine as the console/policies/services.py TRANSITIONS define it, to offer
// only the actions a version's state allows (the server refuses others with 409).

import type { PolicyAction } from "../api/ops";
import type { PolicyState, PolicyVersion } from "../api/types";

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

/**
 * The four-eyes rule for this version, in one line (console/policies/four_eyes.py): who
 * registered and approved it, and which person must take the next step. People, not
 * identities, count: a person's API keys are that person.
 */
export function fourEyesRule(version: PolicyVersion): string {
  const registrant = version.registered_by || "system";
  const registrantPerson = version.registered_by_person;
  const by = registrantPerson && registrantPerson !== registrant ? `${registrant} (for ${registrantPerson})` : registrant;
  const state = version.state ?? "candidate";
  if (state === "candidate") {
    return registrantPerson
      ? `Registered by ${by}; a person other than ${registrantPerson} must approve it.`
      : `Registered by ${by}, not a person; an admin must approve it and another person canary or promote it.`;
  }
  if (state === "retired") return `Registered by ${by}; retired.`;
  const approverPerson = version.approved_by_person;
  const approved = version.approved_by
    ? `approved by ${version.approved_by}${approverPerson && approverPerson !== version.approved_by ? ` (for ${approverPerson})` : ""}`
    : "not approved through the console";
  if (!registrantPerson && approverPerson) {
    // Once in canary the step left is promotion (a rollback needs no second pair of eyes).
    const next = state === "canary" ? "promote" : state === "active" ? null : "canary or promote";
    return next
      ? `Registered by ${by}, ${approved}; a person other than ${approverPerson} must ${next} it.`
      : `Registered by ${by}, ${approved}; active.`;
  }
  return `Registered by ${by}, ${approved}; any admin with a person behind them may take the next step.`;
}
