import { describe, expect, it } from "vitest";

import type { PolicyVersion } from "../api/types";
import { allowedActions, fourEyesRule } from "./actions";

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

describe("fourEyesRule", () => {
  const version = (fields: Partial<PolicyVersion>) => ({ state: "candidate", ...fields }) as PolicyVersion;

  it("asks for another person than the registrant, naming a key's owner", () => {
    expect(fourEyesRule(version({ registered_by: "key:ci", registered_by_person: "alice" }))).toBe(
      "Registered by key:ci (for alice); a person other than alice must approve it.",
    );
  });

  it("asks for a second person to serve a version the system registered", () => {
    expect(
      fourEyesRule(
        version({ state: "approved", registered_by: null, registered_by_person: null, approved_by: "bob", approved_by_person: "bob" }),
      ),
    ).toBe("Registered by system, approved by bob; a person other than bob must canary or promote it.");
  });

  it("asks only for promotion once the canary started", () => {
    const approved = { registered_by: null, registered_by_person: null, approved_by: "bob", approved_by_person: "bob" };
    expect(fourEyesRule(version({ state: "canary", ...approved }))).toBe(
      "Registered by system, approved by bob; a person other than bob must promote it.",
    );
    expect(fourEyesRule(version({ state: "active", ...approved }))).toBe("Registered by system, approved by bob; active.");
  });

  it("lets any person continue once two people have looked", () => {
    expect(
      fourEyesRule(
        version({ state: "shadow", registered_by: "alice", registered_by_person: "alice", approved_by: "key:ops", approved_by_person: "bob" }),
      ),
    ).toBe("Registered by alice, approved by key:ops (for bob); any admin with a person behind them may take the next step.");
  });
});
