import { describe, expect, it } from "vitest";

import { can, type Capability } from "./roles";

const viewer = { roles: ["viewer"] };
const operator = { roles: ["operator", "viewer"] };
const admin = { roles: ["admin", "operator", "viewer"] };
const service = { roles: ["service"] };

describe("can", () => {
  it.each<[string, { roles: string[] } | null, Capability, boolean]>([
    ["viewer reads", viewer, "read", true],
    ["viewer cannot act on nodes", viewer, "act-on-nodes", false],
    ["viewer cannot edit inventory", viewer, "edit-inventory", false],
    ["operator acts on nodes", operator, "act-on-nodes", true],
    ["operator edits inventory", operator, "edit-inventory", true],
    ["operator cannot approve policies", operator, "approve-policies", false],
    ["admin approves policies", admin, "approve-policies", true],
    ["admin manages keys", admin, "manage-keys", true],
    ["viewer cannot explain decisions", viewer, "explain-decisions", false],
    ["operator explains decisions", operator, "explain-decisions", true],
    ["admin explains decisions", admin, "explain-decisions", true],
    ["viewer cannot approve policies", viewer, "approve-policies", false],
    ["operator cannot start training", operator, "start-training", false],
    ["admin starts training", admin, "start-training", true],
    ["viewer cannot calibrate", viewer, "calibrate", false],
    ["operator calibrates", operator, "calibrate", true],
    ["service reads nothing in the console", service, "read", false],
    ["nobody signed in may do nothing", null, "read", false],
  ])("%s", (_, who, capability, expected) => {
    expect(can(who, capability)).toBe(expected);
  });
});
