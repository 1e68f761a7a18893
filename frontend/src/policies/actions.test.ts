import { describe, expect, it } from "vitest";

import { allowedActions } from "./actions";

describe("allowedActions", () => {
  it.each([
    ["candidate", ["approve", "rollback"]],
    ["approved", ["shadow", "canary", "promote", "rollback"]],
    ["shadow", ["canary", "promote", "rollback"]],
    ["canary", ["promote", "rollback"]],
    ["active", ["rollback"]],
    ["retired", []],
  ] as const)("a %s version offers %j", (state, expected) => {
    expect(allowedActions(state)).toEqual(expected);
  });
});
