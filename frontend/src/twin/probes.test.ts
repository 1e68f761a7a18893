import { describe, expect, it } from "vitest";

import { probeProgress, probeSteps, underObservedProfiles } from "./probes";

describe("exploration probes", () => {
  it("names the profiles a run could not pin down", () => {
    const report = {
      profiles: [
        { model: "llama-3.1-8b", accelerator: "h100", status: "fitted", values: {} },
        { model: "llama-3.1-8b", accelerator: "a10g", status: "insufficient_data", values: {} },
        { model: "qwen2.5-7b", accelerator: "l4", status: "not_identifiable", values: {} },
        { model: "qwen2.5-7b", accelerator: "h100", status: "agrees_with_nominal", values: {} },
      ],
    };
    expect(underObservedProfiles(report)).toEqual(["llama-3.1-8b@a10g", "qwen2.5-7b@l4"]);
    expect(underObservedProfiles(null)).toEqual([]);
  });

  it("offers the steps its state allows", () => {
    expect(probeSteps("proposed")).toEqual(["approve", "abort"]);
    expect(probeSteps("approved")).toEqual(["start", "abort"]);
    expect(probeSteps("running")).toEqual(["abort"]);
    expect(probeSteps("completed")).toEqual([]);
    expect(probeSteps("aborted")).toEqual([]);
  });

  it("reads its progress against its budget", () => {
    expect(probeProgress({ sent: 12, max_requests: 1000, share: 0.01 })).toBe("12 / 1000 sent at 1%");
    expect(probeProgress({ sent: 0, max_requests: 40, share: 0.025 })).toBe("0 / 40 sent at 2.5%");
  });
});
