// What the signed-in user may do, from the roles GET /api/v1/me reports (already expanded:
// an operator also holds `viewer`, an admin also `operator`). The server enforces every rule;
// this only decides which controls to show.

export type Role = "viewer" | "operator" | "admin" | "service";

export type Capability =
  | "read"
  | "edit-inventory"
  | "act-on-nodes"
  | "explain-decisions"
  | "approve-policies"
  | "start-training"
  | "calibrate"
  | "run-probes"
  | "manage-keys";

const REQUIRED_ROLE: Record<Capability, Role> = {
  read: "viewer",
  "edit-inventory": "operator",
  "act-on-nodes": "operator",
  // POST /placements admits operators and admins (and services); viewers only read.
  "explain-decisions": "operator",
  // Register, evaluate, approve, shadow, canary, promote and roll back policy versions.
  "approve-policies": "admin",
  "start-training": "admin",
  // Start calibration runs and apply or discard their proposals (they edit the inventory).
  calibrate: "operator",
  // Propose, approve, start and abort exploration probes (live traffic, a canary's rules).
  "run-probes": "admin",
  "manage-keys": "admin",
};

export interface HasRoles {
  roles: readonly string[];
}

export function can(who: HasRoles | null | undefined, capability: Capability): boolean {
  return who != null && who.roles.includes(REQUIRED_ROLE[capability]);
}
